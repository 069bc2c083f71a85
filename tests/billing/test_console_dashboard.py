"""An organization's dashboard: quotas as bars, work running and waiting with why, the month's
GPU-hours per day, spend, forecast and budget (owners and admins only), reservations ahead."""

from datetime import timedelta
from decimal import Decimal

import pytest

from billing import services
from portal import clock
from scheduling.models import GpuClass, QuotaGrant, Workload
from tenants.permissions import Caller

from .conftest import DAY, ran

pytestmark = pytest.mark.django_db

URL = "/orgs/acme/dashboard/"


@pytest.fixture
def busy(on_demand, acme, vision, alice):
    """acme: a quota of 8 H100s (4 guaranteed), a day of use rated, a waiting workload and a
    budget."""
    QuotaGrant.objects.create(
        organization=acme,
        gpu_class=GpuClass.objects.get(name="H100-80GB"),
        resource="gpus",
        guarantee=4,
        limit=8,
    )
    ran(vision, start=1, end=3)
    services.usage_meter(now=DAY + timedelta(days=1))
    Workload.objects.filter(name="w").update(
        state=Workload.State.PENDING, pending_message="H100-80GB: 8 of 8 in use by acme"
    )
    services.budget_save(caller=Caller(user=alice), organization=acme, monthly_amount=Decimal(1000))


def page(client, user) -> str:
    client.force_login(user)
    response = client.get(URL)
    assert response.status_code == 200
    return response.content.decode()


def test_the_dashboard_shows_the_quota_numbers_as_a_bar(busy, alice, client):
    html = page(client, alice)
    assert ("0 of 8 GPUs in use; 4 guaranteed" in html, 'class="bar"' in html) == (True, True)


def test_the_dashboard_says_why_work_waits(busy, alice, client):
    assert "H100-80GB: 8 of 8 in use by acme" in page(client, alice)


def test_an_owner_sees_the_months_spend_and_budget(busy, alice, client):
    html = page(client, alice)
    assert ("This month" in html, "Budget 1000" in html) == (True, True)


def test_a_member_sees_the_work_but_not_the_money(busy, mia, client):
    html = page(client, mia)
    assert ("Workloads" in html, "This month" in html) == (True, False)


def test_another_tenant_gets_a_404(busy, bruno, client):
    client.force_login(bruno)
    assert client.get(URL).status_code == 404


def test_the_chart_has_a_bar_per_day_of_use_this_month(
    on_demand, offer, acme, vision, alice, client
):
    # Noon on the 15th of next month: the two days of use below stay in one month.
    now = clock.now()
    first = now.replace(day=1, hour=12, minute=0, second=0, microsecond=0) + timedelta(days=32)
    clock.advance(seconds=(first.replace(day=15) - now).total_seconds())
    before = (clock.now() - DAY) / timedelta(hours=1)
    ran(vision, start=before - 30, end=before - 29)  # yesterday
    ran(vision, start=before - 3, end=before - 2, name="today")
    services.usage_meter()
    assert page(client, alice).count("</rect>") == 2
