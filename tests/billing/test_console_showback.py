"""The console's showback page: where the operator offers it, an organization's owners and
admins see their GPU-hours of each pool and their share of idle, with what they cost the
operator where it shows costs; members and viewers are refused, another organization's is a
404, and without the offer it is a 404."""

import pytest

from billing import services
from tenants.permissions import Caller

from ..roles import CONSOLE_MANAGERS_READ

pytestmark = pytest.mark.django_db

URL = "/orgs/acme/showback/"


def shown(organization, operator, level: str) -> None:
    services.showback_level_set(
        caller=Caller(user=operator), organization=organization, level=level
    )


@pytest.fixture
def offered(settings, cluster, acme, operator):
    """acme is shown its showback with costs."""
    shown(acme, operator, "cost")
    return settings


@pytest.fixture
def hours_only(cluster, acme, operator):
    """acme is shown its showback in GPU-hours only."""
    shown(acme, operator, "hours")


@pytest.mark.parametrize(("caller", "status"), CONSOLE_MANAGERS_READ)
def test_owners_and_admins_see_their_showback_page_and_nobody_else(
    offered, actors, client, caller, status
):
    if caller != "anonymous":
        client.force_login(actors[caller])
    assert client.get(URL).status_code == status


def test_the_page_names_each_pool_and_the_idle_rule(offered, actors, client):
    offered.PORTAL_BOOKS_IDLE_SHARING = "usage"
    client.force_login(actors["owner"])

    body = client.get(URL).content.decode()

    assert "dgx-h100" in body
    assert "shared in proportion to use" in body


@pytest.mark.parametrize(("caller", "status"), CONSOLE_MANAGERS_READ)
def test_owners_and_admins_see_their_showback_page_in_hours_and_nobody_else(
    hours_only, actors, client, caller, status
):
    if caller != "anonymous":
        client.force_login(actors[caller])
    assert client.get(URL).status_code == status


def test_with_costs_the_page_has_the_cost_columns(offered, actors, client):
    client.force_login(actors["owner"])
    assert "Cost of use" in client.get(URL).content.decode()


def test_in_hours_only_the_page_shows_no_cost(hours_only, actors, client):
    client.force_login(actors["owner"])

    body = client.get(URL).content.decode()

    assert "Share of idle (GPU-hours)" in body
    assert "Cost of use" not in body


def test_showback_turned_off_for_the_organization_is_a_404_page(
    offered, acme, operator, actors, client
):
    shown(acme, operator, "off")
    client.force_login(actors["owner"])
    assert client.get(URL).status_code == 404


def test_another_organizations_showback_page_is_a_404(offered, globex, operator, actors, client):
    shown(globex, operator, "cost")
    client.force_login(actors["owner"])
    assert client.get("/orgs/globex/showback/").status_code == 404


def test_without_the_operators_offer_the_page_is_a_404(cluster, actors, client):
    client.force_login(actors["owner"])
    assert client.get(URL).status_code == 404


def test_the_usage_page_links_to_showback_when_it_is_offered(hours_only, actors, client):
    client.force_login(actors["owner"])
    assert URL in client.get("/orgs/acme/usage/").content.decode()


def test_the_usage_page_has_no_showback_link_when_it_is_off(cluster, actors, client):
    client.force_login(actors["owner"])
    assert URL not in client.get("/orgs/acme/usage/").content.decode()


def test_a_bad_month_is_answered_on_the_form(offered, actors, client):
    client.force_login(actors["owner"])
    response = client.get(URL + "?month=2026-13")
    assert response.status_code == 200
    assert "YYYY-MM" in response.content.decode()
