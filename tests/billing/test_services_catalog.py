"""The catalog's prices: dated versions, one in force at a time, set by operators only,
never in the past nor negative; offering an item to some organizations is audited."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError

from billing import selectors, services
from portal import clock
from portal.errors import Forbidden
from tenants.permissions import Caller

pytestmark = pytest.mark.django_db


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
