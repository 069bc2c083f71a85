from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError

from billing import selectors, services
from portal import clock
from portal.errors import Forbidden
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


def test_the_price_in_force_follows_the_versions_over_time(offer, operator):
    item = offer(price="2.9000")
    change = clock.now() + timedelta(days=30)
    services.price_version_add(
        caller=Caller(user=operator), item=item, unit_price=Decimal("2.5000"), effective_from=change
    )
    prices = [
        selectors.price_in_force(item=item, at=at).unit_price
        for at in (change - timedelta(seconds=1), change)
    ]
    assert prices == [Decimal("2.9000"), Decimal("2.5000")]


def test_a_price_version_dated_in_the_past_is_refused_on_its_date(offer, operator):
    item = offer()
    with pytest.raises(ValidationError) as refused:
        services.price_version_add(
            caller=Caller(user=operator),
            item=item,
            unit_price=Decimal("1"),
            effective_from=clock.now() - timedelta(hours=1),
        )
    assert list(refused.value.message_dict) == ["effective_from"]


def test_a_negative_price_is_refused_on_the_price(offer, operator):
    item = offer()
    with pytest.raises(ValidationError) as refused:
        services.price_version_add(
            caller=Caller(user=operator),
            item=item,
            unit_price=Decimal("-1"),
            effective_from=clock.now() + timedelta(days=1),
        )
    assert list(refused.value.message_dict) == ["unit_price"]


def test_two_versions_from_the_same_moment_are_refused(offer, operator):
    item = offer()
    moment = clock.now() + timedelta(days=1)
    services.price_version_add(
        caller=Caller(user=operator), item=item, unit_price=Decimal("2"), effective_from=moment
    )
    with pytest.raises(ValidationError):
        services.price_version_add(
            caller=Caller(user=operator), item=item, unit_price=Decimal("3"), effective_from=moment
        )


def test_only_operators_set_prices(offer, alice):
    item = offer()
    with pytest.raises(Forbidden):
        services.price_version_add(
            caller=Caller(user=alice),
            item=item,
            unit_price=Decimal("1"),
            effective_from=clock.now() + timedelta(days=1),
        )


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


def test_the_catalog_page_lists_the_items_with_their_prices(offer, alice, client):
    offer(name="H100 on demand", price="2.9000")
    client.force_login(alice)
    page = client.get("/orgs/acme/catalog/").content.decode()
    assert "2.9000 EUR / GPU-hour" in page


def test_the_admin_refuses_a_price_dated_in_the_past_on_the_form(offer, client):
    from ..factories import UserFactory

    item = offer()
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    past = clock.now() - timedelta(days=1)
    response = client.post(
        "/admin/billing/priceversion/add/",
        {
            "item": item.pk,
            "unit_price": "1.0000",
            "effective_from_0": past.strftime("%Y-%m-%d"),
            "effective_from_1": past.strftime("%H:%M:%S"),
        },
    )
    assert (response.status_code, "cannot start in the past" in response.content.decode()) == (
        200,
        True,
    )


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


def test_offering_an_item_to_organizations_is_audited_with_them(operator, h100, acme):
    from billing.models import CatalogItem
    from tenants.models import AuditEvent

    item = services.catalog_item_save(
        caller=Caller(user=operator),
        item=CatalogItem(
            slug="acme-only", name="Acme only", kind="on_demand", gpu_class=h100, public=False
        ),
        organizations=[acme],
    )
    event = AuditEvent.objects.get(action="catalog.item_save")
    assert (list(item.organizations.all()), event.payload["organizations"]) == ([acme], ["acme"])
