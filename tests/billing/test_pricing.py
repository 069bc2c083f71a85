"""Which price is in force, which on-demand item applies, and what reserved capacity costs: one
rule each (``billing.pricing``), which every reader of prices (the catalog, rating in Python
and in SQL, orders, cancellation charges, pricing unpriced use after the fact) follows."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db.models import Sum

from billing import selectors, services
from billing.models import BillingRecord
from portal import clock
from scheduling.models import PriorityTier, Reservation
from tenants.permissions import Caller

from .conftest import DAY, at, ran
from .test_services_metering import reserve

pytestmark = pytest.mark.django_db


def price(operator, item, unit_price, *, days=None, organization=None):
    """A version of ``item``'s price from ``days`` after now (None: from now)."""
    return services.price_version_add(
        caller=Caller(user=operator),
        item=item,
        unit_price=Decimal(unit_price),
        effective_from=None if days is None else clock.now() + timedelta(days=days),
        organization=organization,
    )


def listed(acme, alice, at=None):
    [item] = selectors.catalog_for(
        caller=Caller(user=alice), organization=acme, at=at or clock.now()
    )
    return item


def test_an_organizations_own_price_applies_even_when_a_later_list_price_started(
    on_demand, operator, acme
):
    price(operator, on_demand, "2.5", organization=acme)
    price(operator, on_demand, "3.1", days=1)
    version = selectors.price_in_force(
        item=on_demand, at=clock.now() + timedelta(days=2), organization=acme
    )
    assert version.unit_price == Decimal("2.5")


def test_the_list_price_applies_until_the_organizations_own_starts(on_demand, operator, acme):
    price(operator, on_demand, "2.5", days=1, organization=acme)
    prices = [
        selectors.price_in_force(item=on_demand, at=moment, organization=acme).unit_price
        for moment in (clock.now() + timedelta(hours=23), clock.now() + timedelta(days=1))
    ]
    assert prices == [Decimal("2.9"), Decimal("2.5")]


def test_an_item_has_no_price_in_force_before_its_first_version(on_demand):
    first = on_demand.prices.get().effective_from
    assert selectors.price_in_force(item=on_demand, at=first - timedelta(seconds=1)) is None


def test_another_organizations_own_price_does_not_apply(on_demand, operator, acme, globex):
    price(operator, on_demand, "1.0", organization=globex)
    version = selectors.price_in_force(item=on_demand, at=clock.now(), organization=acme)
    assert version.unit_price == Decimal("2.9")


def test_the_catalog_gives_the_organizations_own_price_and_when_it_started(
    on_demand, operator, acme, alice
):
    own = price(operator, on_demand, "2.5", organization=acme)
    item = listed(acme, alice)
    assert (item.unit_price, item.price_from) == (Decimal("2.5"), own.effective_from)


def test_the_catalog_hides_a_list_change_while_the_organizations_own_price_is_in_force(
    on_demand, operator, acme, alice
):
    price(operator, on_demand, "2.5", organization=acme)
    price(operator, on_demand, "3.1", days=1)
    item = listed(acme, alice)
    assert (item.next_price, item.next_price_from) == (None, None)


def test_the_catalog_gives_the_organizations_next_own_price(on_demand, operator, acme, alice):
    price(operator, on_demand, "2.5", organization=acme)
    upcoming = price(operator, on_demand, "2.4", days=2, organization=acme)
    item = listed(acme, alice)
    assert (item.next_price, item.next_price_from) == (Decimal("2.4"), upcoming.effective_from)


def test_the_catalog_gives_an_own_price_to_come_as_the_next_price(on_demand, operator, acme, alice):
    upcoming = price(operator, on_demand, "2.5", days=2, organization=acme)
    price(operator, on_demand, "3.1", days=3)
    item = listed(acme, alice)
    assert (item.next_price, item.next_price_from) == (Decimal("2.5"), upcoming.effective_from)


def test_use_priced_after_the_fact_takes_the_item_for_its_tier(offer, cluster, vision, operator):
    ran(vision, start=1, end=2, tier="batch")
    services.usage_meter(now=at(3))
    for slug, tier, unit_price in [("h100-all", None, "2.9"), ("h100-batch", "batch", "1.74")]:
        tier = tier and PriorityTier.objects.get(name=tier)
        offer(slug=slug, kind="on_demand", price=unit_price, tier=tier)
    services.usage_unpriced_price(caller=Caller(user=operator))
    assert BillingRecord.objects.get().unit_price == Decimal("1.7400")


def test_of_two_items_for_every_tier_the_first_by_slug_prices(offer, cluster, vision):
    offer(slug="h100-b", kind="on_demand", price="3.0000")
    offer(slug="h100-a", kind="on_demand", price="2.0000")
    ran(vision, start=1, end=2)
    services.usage_meter(now=at(3))
    assert BillingRecord.objects.get().unit_price == Decimal("2.0000")


def test_reserved_capacity_is_recorded_at_the_windows_price_per_reserved_gpu_hour(
    reserved, alice, acme, operator
):
    reserve(alice, acme, operator, start=1, end=4, gpus=3)  # 3 x 3 h x 2.4650 = 22.19
    services.usage_meter(now=at(24))
    records = BillingRecord.objects.filter(charge="reservation")
    assert set(records.values_list("unit_price", flat=True)) == {Decimal("2.4656")}


def test_reserved_capacity_costs_the_windows_price_spread_over_its_hours(
    reserved, alice, acme, operator
):
    reserve(alice, acme, operator, start=1.5, end=4, gpus=3)  # 3 x 2.5 h x 2.4650 = 18.49
    services.usage_meter(now=at(24))
    records = BillingRecord.objects.filter(charge="reservation").order_by("starts_at")
    costs = list(records.values_list("cost", flat=True))
    assert (costs[0], records.aggregate(total=Sum("cost"))["total"]) == (
        Decimal("3.698"),  # half an hour of the window's 18.49 (rounded to cents first)
        Decimal("18.49"),
    )


def test_reserved_capacity_bought_by_an_order_is_priced_at_the_orders_total(
    reserved, alice, acme, operator
):
    order = services.order_create(
        caller=Caller(user=alice),
        organization=acme,
        request=services.OrderRequest(
            item="h100-reserved",
            quantity=3,
            starts_at=at(1),
            ends_at=at(4),
            pool="dgx-h100",
        ),
    )
    services.order_approve(caller=Caller(user=operator), order=order)
    services.order_fulfil(order_id=order.pk)
    assert Reservation.objects.filter(organization=acme).exists()
    order.total = Decimal("10.00")  # as if negotiated: the order's total is what is charged
    order.save(update_fields=["total"])
    services.usage_meter(now=at(24))
    records = BillingRecord.objects.filter(charge="reservation")
    assert (set(records.values_list("unit_price", flat=True)), selectors.charged(records)) == (
        {Decimal("1.1111")},
        Decimal("10.00"),
    )


def test_the_first_hour_of_the_window_begins_at_the_reservations_start(
    reserved, alice, acme, operator
):
    reserve(alice, acme, operator, start=1.5, end=3)
    services.usage_meter(now=at(24))
    starts = BillingRecord.objects.filter(charge="reservation").order_by("starts_at")
    assert [r.starts_at for r in starts] == [DAY + timedelta(hours=1.5), at(2)]


def test_the_catalog_gives_a_list_change_before_an_own_price_to_come_as_the_next_price(
    on_demand, operator, acme, alice
):
    listed_change = price(operator, on_demand, "3.1", days=1)
    price(operator, on_demand, "2.5", days=2, organization=acme)
    item = listed(acme, alice)
    assert (item.next_price, item.next_price_from) == (Decimal("3.1"), listed_change.effective_from)


def test_use_begun_before_its_item_was_offered_stays_unpriced_beside_use_begun_after(
    offer, cluster, vision
):
    offer(slug="h100-on-demand", kind="on_demand", price="2.9000", active_from=at(1))
    ran(vision, start=2, end=3, name="after")
    ran(vision, start=0, end=0.5, name="before")
    services.usage_meter(now=at(4))
    prices = dict(
        BillingRecord.objects.values_list("interval__placement__workload__name", "unit_price")
    )
    assert prices == {"after": Decimal("2.9000"), "before": None}
