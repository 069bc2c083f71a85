"""Operators' fair-share screen in admin: each organization's decayed usage, weight and share,
read-only; its weight edited through the operator's service, audited as the API's edit."""

import re
from datetime import timedelta

import pytest

from portal import clock
from scheduling.models import TenantUsage
from tenants.models import AuditEvent

from ..factories import OrganizationFactory, UserFactory

pytestmark = pytest.mark.django_db

LIST = "/admin/scheduling/fairsharestanding/"


@pytest.fixture
def operator_client(client):
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    return client


@pytest.fixture
def used(settings, acme, globex):
    """acme used 300 decayed GPU-hours, globex 100 (as the last cycle counted them, now)."""
    settings.PORTAL_FAIR_SHARE_HALF_LIFE_HOURS = 168
    for organization, hours in ((acme, 300), (globex, 100)):
        TenantUsage.objects.create(
            organization=organization, gpu_seconds=hours * 3600, as_of=clock.now()
        )


def cells(page, column: str) -> list[str]:
    return re.findall(rf'<td class="field-{column}">([^<]*)</td>', page.content.decode())


def weight_form(weight: str) -> dict:
    return {"fair_share_weight": weight}


def test_the_list_shows_each_organizations_decayed_usage_and_shares(operator_client, used):
    page = operator_client.get(LIST)
    assert (cells(page, "decayed_gpu_hours"), cells(page, "usage_share")) == (
        ["300.0", "100.0"],
        ["75.0%", "25.0%"],
    )


def test_an_organization_that_does_not_compete_shows_no_share(operator_client, used):
    OrganizationFactory(slug="initech")
    page = operator_client.get(LIST)
    assert cells(page, "fair_share") == ["50.0%", "50.0%", "—"]


def test_an_organizations_page_says_why_its_work_is_ordered_where_it_is(
    operator_client, used, acme
):
    page = operator_client.get(f"{LIST}{acme.pk}/change/").content.decode()
    assert "acme used 300 GPU-hours lately" in page


def test_only_the_weight_is_an_input_on_an_organizations_page(operator_client, used, acme):
    page = operator_client.get(f"{LIST}{acme.pk}/change/").content.decode()
    inputs = set(re.findall(r'<input[^>]* name="([a-z_]+)"', page)) - {"csrfmiddlewaretoken"}
    assert inputs == {"fair_share_weight", "_save", "_continue"}


def test_a_weight_set_here_is_audited_as_the_operator_apis_edit(operator_client, used, acme):
    operator_client.post(f"{LIST}{acme.pk}/change/", weight_form("2.50"))
    acme.refresh_from_db()
    event = AuditEvent.objects.get(action="organization.update", organization=acme)
    assert (str(acme.fair_share_weight), event.payload) == (
        "2.50",
        {"fair_share_weight": {"from": "1.00", "to": "2.50"}},
    )


def test_a_weight_of_zero_is_refused_on_its_field(operator_client, used, acme):
    page = operator_client.post(f"{LIST}{acme.pk}/change/", weight_form("0"))
    acme.refresh_from_db()
    assert "greater than or equal to 0.01" in page.content.decode()
    assert str(acme.fair_share_weight) == "1.00"


def test_the_decayed_usage_is_not_changed_here(operator_client, used, acme):
    operator_client.post(f"{LIST}{acme.pk}/change/", {**weight_form("1.00"), "stored_usage": "0"})
    assert TenantUsage.objects.get(organization=acme).gpu_seconds == 300 * 3600


def test_standings_are_neither_added_nor_deleted_here(operator_client, used, acme):
    responses = (
        operator_client.get(f"{LIST}add/"),
        operator_client.post(f"{LIST}{acme.pk}/delete/", {"post": "yes"}),
    )
    assert [r.status_code for r in responses] == [403, 403]


def test_a_tenant_user_is_sent_to_the_admin_login(client, alice, used):
    client.force_login(alice)
    response = client.get(LIST)
    assert (response.status_code, "/admin/login/" in response["Location"]) == (302, True)


def test_usage_stored_long_ago_shows_as_decayed_to_now(operator_client, used, acme):
    TenantUsage.objects.filter(organization=acme).update(as_of=clock.now() - timedelta(hours=168))
    page = operator_client.get(LIST)
    assert cells(page, "decayed_gpu_hours")[0] == "150.0"
