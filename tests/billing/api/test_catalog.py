"""The catalog API: every member browses the items offered to the organization with the
price in force (its own price before the list price) and the next one, and which can be
ordered."""

from datetime import timedelta
from decimal import Decimal

import pytest

from billing import services
from portal import clock
from tenants.permissions import Caller

pytestmark = pytest.mark.django_db

URL = "/api/v1/organizations/acme/catalog/"


def slugs(user, api_as) -> list[str]:
    return [item["slug"] for item in api_as(user).get(URL).json()["results"]]


@pytest.mark.parametrize(
    ("caller", "status"),
    [("owner", 200), ("viewer", 200), ("foreign", 404), ("outsider", 404), ("anonymous", 401)],
)
def test_every_member_browses_the_catalog(offer, actors, api_as, caller, status):
    offer()
    assert api_as(actors.get(caller)).get(URL).status_code == status


def test_the_catalog_gives_the_price_in_force_as_a_decimal_in_the_currency(offer, alice, api_as):
    offer(price="2.9000")
    [item] = api_as(alice).get(URL).json()["results"]
    assert (item["unit_price"], item["currency"], item["unit"]) == ("2.9000", "EUR", "GPU-hour")


def test_a_dated_price_version_shows_as_the_next_price_and_changes_nothing_before(
    offer, operator, alice, api_as
):
    item = offer(price="2.9000")
    services.price_version_add(
        caller=Caller(user=operator),
        item=item,
        unit_price=Decimal("2.5000"),
        effective_from=clock.now() + timedelta(days=30),
    )
    [listed] = api_as(alice).get(URL).json()["results"]
    assert (listed["unit_price"], listed["next_price"]) == ("2.9000", "2.5000")


def test_an_item_offered_to_some_organizations_is_invisible_to_the_others(
    offer, acme, globex, alice, bruno, api_as
):
    private = offer(slug="acme-special", public=False)
    private.organizations.add(acme)
    globex_url = "/api/v1/organizations/globex/catalog/"
    seen = [i["slug"] for i in api_as(bruno).get(globex_url).json()["results"]]
    assert (slugs(alice, api_as), seen) == (["acme-special"], [])


def test_an_item_outside_its_active_window_is_not_offered(offer, alice, api_as):
    offer(slug="later", active_from=clock.now() + timedelta(days=2))
    assert slugs(alice, api_as) == []


def test_an_organizations_own_price_replaces_the_list_price_for_it_only(
    offer, operator, acme, alice, bruno, api_as
):
    item = offer(price="2.9000")
    services.price_version_add(
        caller=Caller(user=operator), item=item, unit_price=Decimal("2.1000"), organization=acme
    )
    theirs = api_as(bruno).get("/api/v1/organizations/globex/catalog/").json()["results"]
    [mine] = api_as(alice).get(URL).json()["results"]
    assert (mine["unit_price"], theirs[0]["unit_price"]) == ("2.1000", "2.9000")


def test_a_list_price_change_does_not_show_as_next_for_an_organization_with_its_own(
    offer, operator, acme, alice, api_as
):
    item = offer(price="2.9000")
    services.price_version_add(
        caller=Caller(user=operator), item=item, unit_price=Decimal("2.1000"), organization=acme
    )
    services.price_version_add(
        caller=Caller(user=operator),
        item=item,
        unit_price=Decimal("3.5000"),
        effective_from=clock.now() + timedelta(days=30),
    )
    [mine] = api_as(alice).get(URL).json()["results"]
    assert (mine["unit_price"], mine["next_price"]) == ("2.1000", None)


def test_an_organizations_own_price_dated_later_shows_as_its_next_price(
    offer, operator, acme, alice, api_as
):
    item = offer(price="2.9000")
    services.price_version_add(
        caller=Caller(user=operator),
        item=item,
        unit_price=Decimal("2.1000"),
        organization=acme,
        effective_from=clock.now() + timedelta(days=7),
    )
    [mine] = api_as(alice).get(URL).json()["results"]
    assert (mine["unit_price"], mine["next_price"]) == ("2.9000", "2.1000")


def test_the_catalog_says_which_items_can_be_ordered(on_demand, reserved, alice, api_as):
    items = api_as(alice).get("/api/v1/organizations/acme/catalog/").json()
    items = items.get("results", items)
    assert {i["slug"]: i["orderable"] for i in items} == {
        "h100-on-demand": False,
        "h100-reserved": True,
    }
