"""The operators' books page: each pool's hours stacked by category, its cost and margin, the
exports; no page for tenants."""

from decimal import Decimal

import pytest
from django.urls import reverse

from billing import services
from scheduling.models import NodePool
from tenants.permissions import Caller

from .conftest import MONTH, YEAR

pytestmark = pytest.mark.django_db


@pytest.fixture
def costed(cluster, operator):
    services.cost_model_add(
        caller=Caller(user=operator),
        pool=NodePool.objects.get(name="dgx-h100"),
        purchase_price_per_gpu=Decimal("36000.00"),
        lifetime_months=50,
        nameplate_watts=700,
        price_per_kwh=Decimal("0.2000"),
    )


def test_an_operator_sees_each_pools_hours_stacked_by_category(costed, operator, client):
    client.force_login(operator)
    page = client.get(reverse("billing:books")).content.decode()
    assert "dgx-h100: GPU-hours by category" in page
    assert "Unallocated idle:" in page


def test_the_books_page_downloads_its_csv(costed, operator, client):
    client.force_login(operator)
    response = client.get(reverse("billing:books"), {"format": "csv"})
    assert response["Content-Type"] == "text/csv"
    assert response.content.decode().startswith("pool,gpu_class,category,")


def test_the_page_says_it_read_a_draft_of_a_month_still_open(invoice, operator, client):
    client.force_login(operator)
    page = client.get(reverse("billing:books"), {"month": f"{YEAR}-{MONTH:02d}"}).content.decode()
    assert "1 of them draft</strong>" in page


def test_a_month_written_wrong_is_said_on_the_page(costed, operator, client):
    client.force_login(operator)
    page = client.get(reverse("billing:books"), {"month": "2026-13"}).content.decode()
    assert "A month is written YYYY-MM" in page


def test_a_tenant_gets_no_books_page(alice, client):
    client.force_login(alice)
    assert client.get(reverse("billing:books")).status_code == 403
