"""The console's showback page: where the operator offers it, an organization's owners and
admins see what their use of each pool cost the operator and their share of idle; members and
viewers are refused, another organization's is a 404, and without the offer it is a 404."""

import pytest

from ..roles import CONSOLE_MANAGERS_READ

pytestmark = pytest.mark.django_db

URL = "/orgs/acme/showback/"


@pytest.fixture
def offered(settings, cluster):
    settings.PORTAL_BOOKS_SHOWBACK = True
    return settings


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


def test_another_organizations_showback_page_is_a_404(offered, globex, actors, client):
    client.force_login(actors["owner"])
    assert client.get("/orgs/globex/showback/").status_code == 404


def test_without_the_operators_offer_the_page_is_a_404(cluster, actors, client):
    client.force_login(actors["owner"])
    assert client.get(URL).status_code == 404


def test_the_usage_page_links_to_showback_when_it_is_offered(offered, actors, client):
    client.force_login(actors["owner"])
    assert URL in client.get("/orgs/acme/usage/").content.decode()


def test_a_bad_month_is_answered_on_the_form(offered, actors, client):
    client.force_login(actors["owner"])
    response = client.get(URL + "?month=2026-13")
    assert response.status_code == 200
    assert "YYYY-MM" in response.content.decode()
