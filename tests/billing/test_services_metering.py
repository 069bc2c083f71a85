"""Metering: one usage interval per placement that ran, rated into records split at every hour
and price change; nothing lost or counted twice however often or however interrupted."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import IntegrityError
from django.db.models import Sum
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from billing import services
from billing.models import BillingRecord, UsageInterval
from portal import clock
from scheduling import services as scheduling
from scheduling.models import Placement, PriorityTier, Reservation, Workload
from scheduling.services.lifecycle import workloads_evict
from tenants.permissions import Caller

from .conftest import DAY, at, ran

pytestmark = pytest.mark.django_db


def billed() -> Decimal:
    return BillingRecord.objects.aggregate(total=Sum("quantity_seconds"))["total"] or Decimal(0)


def test_a_placement_that_ran_opens_one_interval(on_demand, vision):
    ran(vision, start=1, end=2)
    services.usage_intervals_sync()
    services.usage_intervals_sync()
    interval = UsageInterval.objects.get()
    assert (interval.amount, interval.resource, interval.started_at, interval.ended_at) == (
        8,
        "gpus",
        at(1),
        at(2),
    )


def test_a_placement_evicted_back_to_the_queue_before_metering_is_metered_at_its_class(
    on_demand, vision
):
    clock.advance(seconds=(at(4) - clock.now()).total_seconds())
    placement = ran(vision, start=1, gpus=8)
    key = str(placement.workload_id)
    workloads_evict(
        reasons={key: "Evicted for a higher tier."},
        preempted_by={key: None},
        event_data={key: {"reason": "priority"}},
    )
    services.usage_intervals_sync()
    interval = UsageInterval.objects.get()
    assert (interval.gpu_class.name, interval.started_at, interval.ended_at) == (
        "H100-80GB",
        at(1),
        Placement.objects.get().ended_at,
    )


def test_a_placement_that_never_ran_costs_nothing(on_demand, vision):
    placement = ran(vision, start=1, end=2)
    Placement.objects.filter(pk=placement.pk).update(running_at=None)
    services.usage_intervals_sync()
    assert UsageInterval.objects.count() == 0


def test_an_interval_closes_when_its_placement_ends(on_demand, vision):
    placement = ran(vision, start=1)
    services.usage_intervals_sync()
    Placement.objects.filter(pk=placement.pk).update(ended_at=at(3))
    counts = services.usage_intervals_sync()
    assert (counts, UsageInterval.objects.get().ended_at) == ({"opened": 0, "closed": 1}, at(3))


@pytest.mark.parametrize(
    ("fields", "resource", "amount"),
    [
        ({"gpus": 4}, "gpus", 4),
        ({"gpu_milli": 250}, "shared", 250),
        ({"mig": ("mig-1g.10gb", 3)}, "mig", 3),
    ],
)
def test_an_interval_counts_its_resource_in_its_unit(on_demand, vision, fields, resource, amount):
    ran(vision, start=1, end=2, **fields)
    services.usage_intervals_sync()
    interval = UsageInterval.objects.get()
    assert (interval.resource, interval.amount) == (resource, amount)


def test_rating_splits_an_interval_at_every_hour(on_demand, vision):
    ran(vision, start=0.5, end=2.25)
    services.usage_intervals_sync()
    services.usage_rate(now=at(5))
    pieces = list(BillingRecord.objects.values_list("starts_at", "ends_at", "quantity_seconds"))
    assert pieces == [
        (at(0.5), at(1), Decimal(8 * 1800)),
        (at(1), at(2), Decimal(8 * 3600)),
        (at(2), at(2.25), Decimal(8 * 900)),
    ]


def test_a_record_costs_the_gpu_hours_at_the_price_in_force(on_demand, vision):
    ran(vision, start=1, end=2)
    services.usage_intervals_sync()
    services.usage_rate(now=at(5))
    record = BillingRecord.objects.get()
    assert (record.unit_price, record.cost) == (Decimal("2.9000"), Decimal("23.2"))


def test_a_share_pays_its_fraction_of_a_gpu_hour(on_demand, vision):
    ran(vision, start=1, end=2, gpu_milli=250)
    services.usage_intervals_sync()
    services.usage_rate(now=at(5))
    assert BillingRecord.objects.get().cost == Decimal("0.725")


def test_a_price_change_inside_an_hour_splits_it(on_demand, operator, vision):
    services.price_version_add(
        caller=Caller(user=operator), item=on_demand, unit_price=Decimal(4), effective_from=at(1.5)
    )
    ran(vision, start=1, end=2)
    services.usage_intervals_sync()
    services.usage_rate(now=at(5))
    pieces = list(BillingRecord.objects.values_list("starts_at", "unit_price", "cost"))
    assert pieces == [
        (at(1), Decimal("2.9000"), Decimal("11.6")),
        (at(1.5), Decimal("4.0000"), Decimal("16")),
    ]


def test_an_organizations_own_price_applies_over_the_list_price(on_demand, operator, acme, vision):
    services.price_version_add(
        caller=Caller(user=operator),
        item=on_demand,
        unit_price=Decimal("2.5"),
        effective_from=at(0),
        organization=acme,
    )
    ran(vision, start=1, end=2)
    services.usage_intervals_sync()
    services.usage_rate(now=at(5))
    assert BillingRecord.objects.get().unit_price == Decimal("2.5000")


def test_an_item_for_the_tier_prices_before_one_for_every_tier(offer, cluster, vision):
    offer(slug="h100-on-demand", kind="on_demand", price="2.9000")
    offer(
        slug="h100-batch",
        kind="on_demand",
        price="1.7400",
        tier=PriorityTier.objects.get(name="batch"),
    )
    ran(vision, start=1, end=2, tier="batch")
    services.usage_intervals_sync()
    services.usage_rate(now=at(5))
    assert BillingRecord.objects.get().unit_price == Decimal("1.7400")


def test_use_nothing_prices_is_counted_at_no_cost(cluster, vision):
    ran(vision, start=1, end=2)
    services.usage_intervals_sync()
    services.usage_rate(now=at(5))
    record = BillingRecord.objects.get()
    assert (record.quantity_seconds, record.unit_price, record.cost) == (
        Decimal(8 * 3600),
        None,
        Decimal(0),
    )


def test_a_running_interval_is_rated_in_whole_hours_only(on_demand, vision):
    ran(vision, start=0.5)
    services.usage_intervals_sync()
    services.usage_rate(now=at(2.75))
    assert list(BillingRecord.objects.values_list("ends_at", flat=True)) == [at(1), at(2)]


def test_rating_again_writes_nothing(on_demand, vision):
    ran(vision, start=0.5, end=3.5)
    services.usage_intervals_sync()
    first = services.usage_rate(now=at(5))
    again = services.usage_rate(now=at(5))
    assert (first, again, BillingRecord.objects.count()) == (4, 0, 4)


def test_the_database_refuses_a_second_record_for_one_piece(on_demand, vision):
    ran(vision, start=1, end=2)
    services.usage_intervals_sync()
    services.usage_rate(now=at(5))
    record = BillingRecord.objects.get()
    record.pk = None
    with pytest.raises(IntegrityError):
        record.save()


@pytest.mark.slow
@settings(
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    start_minutes=st.integers(min_value=0, max_value=60 * 24 * 40),
    length_seconds=st.integers(min_value=1, max_value=3600 * 24 * 35),
    micro=st.integers(min_value=0, max_value=999_999),
    amount=st.integers(min_value=1, max_value=8),
    change_minutes=st.lists(st.integers(min_value=1, max_value=60 * 24 * 80), max_size=3),
    stops=st.lists(st.integers(min_value=0, max_value=3600 * 24 * 80), max_size=4),
)
def test_billed_seconds_equal_placed_seconds_exactly_however_rating_is_interrupted(
    on_demand, operator, vision, start_minutes, length_seconds, micro, amount, change_minutes, stops
):
    """Across hour, day, month and price-change boundaries, rated at arbitrary moments while
    the interval runs and once after it ended: the seconds billed are the seconds placed."""
    BillingRecord.objects.all().delete()
    UsageInterval.objects.all().delete()
    Placement.objects.all().delete()
    Workload.objects.all().delete()
    for minutes in sorted(set(change_minutes)):
        effective = at(minutes / 60)
        if not on_demand.prices.filter(effective_from=effective, organization=None).exists():
            services.price_version_add(
                caller=Caller(user=operator),
                item=on_demand,
                unit_price=Decimal(minutes % 7 + 1),
                effective_from=effective,
            )
    start = at(start_minutes / 60) + timedelta(microseconds=micro)
    end = start + timedelta(seconds=length_seconds)
    placement = ran(vision, start=start_minutes / 60, gpus=amount)
    Placement.objects.filter(pk=placement.pk).update(running_at=start)
    services.usage_intervals_sync()
    for second in sorted(stops):
        moment = DAY + timedelta(seconds=second)
        if moment < end:
            services.usage_rate(now=moment)
    Placement.objects.filter(pk=placement.pk).update(ended_at=end)
    services.usage_intervals_sync()
    services.usage_rate(now=end + timedelta(hours=1))
    services.usage_rate(now=end + timedelta(hours=2))
    placed = amount * Decimal((end - start) // timedelta(microseconds=1)) / 10**6
    assert billed() == placed


# Reconciliation: placed against billed, per organization and resource.


def test_a_metered_day_reconciles_without_differences(on_demand, vision):
    ran(vision, start=1, end=5.5)
    ran(vision, start=3, gpu_milli=500, name="share")
    services.usage_meter(now=at(12))
    result = services.usage_reconcile(starts_at=at(0), ends_at=at(24), now=at(12))
    assert (result.balanced, result.placed_seconds) == (True, Decimal(8 * 16200 + 500 * 32400))


def test_usage_not_yet_rated_is_reported_as_a_difference(on_demand, acme, vision):
    ran(vision, start=1, end=2)
    result = services.usage_reconcile(starts_at=at(0), ends_at=at(24), now=at(12))
    assert result.differences == [
        {
            "organization": "acme",
            "resource": "gpus",
            "placed_seconds": "28800.000000",
            "billed_seconds": "0",
        }
    ]


def test_a_period_including_the_current_hour_reconciles_without_differences(on_demand, vision):
    """A workload ended within the current hour is rated to its end; both sides stop at the
    last whole hour."""
    ran(vision, start=1, end=12.25)
    services.usage_meter(now=at(12.5))
    result = services.usage_reconcile(starts_at=at(0), ends_at=at(24), now=at(12.5))
    assert (result.balanced, result.placed_seconds) == (True, Decimal(8 * 11 * 3600))


def test_a_period_must_be_whole_hours(on_demand, vision):
    with pytest.raises(ValueError):
        services.usage_reconcile(starts_at=at(0.5), ends_at=at(24))


# Reserved capacity: charged for the whole window; use inside it not charged again.


def reserve(user, organization, operator, *, start, end, gpus=8):
    """An approved reservation of the dgx-h100 pool from ``start`` to ``end`` (hours)."""
    [held] = scheduling.reservations_request(
        caller=Caller(user=user),
        organization=organization,
        request=scheduling.ReservationRequest(
            gpu_class="H100-80GB", gpus=gpus, starts_at=at(start), ends_at=at(end), pool="dgx-h100"
        ),
    )
    return scheduling.reservation_approve(caller=Caller(user=operator), reservation=held)


def charges() -> list[tuple]:
    return list(
        BillingRecord.objects.filter(interval__isnull=False)
        .order_by("starts_at")
        .values_list("starts_at", "ends_at", "charge", "cost")
    )


def test_use_inside_a_reservation_is_not_charged_again_and_beyond_it_is_on_demand(
    on_demand, reserved, alice, acme, operator, vision
):
    reserve(alice, acme, operator, start=1, end=2)
    ran(vision, start=1, end=3)
    services.usage_meter(now=at(24))
    assert charges() == [
        (at(1), at(2), "reserved_use", Decimal(0)),
        (at(2), at(3), "on_demand", Decimal("23.2")),
    ]


def test_use_beyond_a_reservations_capacity_is_on_demand(
    on_demand, reserved, alice, acme, operator, vision
):
    reserve(alice, acme, operator, start=1, end=2)
    ran(vision, start=1, end=2, name="first")
    ran(vision, start=1, end=2, name="second")
    services.usage_meter(now=at(24))
    assert sorted(charge for _, _, charge, _ in charges()) == ["on_demand", "reserved_use"]


def test_reserved_capacity_is_charged_hour_by_hour_for_the_whole_window_used_or_not(
    reserved, alice, acme, operator
):
    reserve(alice, acme, operator, start=1, end=5)  # 8 x 4 h x 2.4650 = 78.88
    services.usage_meter(now=at(24))
    records = BillingRecord.objects.filter(charge="reservation")
    assert (records.count(), records.aggregate(total=Sum("cost"))["total"]) == (
        4,
        Decimal("78.88"),
    )


def test_an_open_window_is_charged_to_the_last_whole_hour(reserved, alice, acme, operator):
    reserve(alice, acme, operator, start=1, end=5)
    services.usage_meter(now=at(3.5))
    records = BillingRecord.objects.filter(charge="reservation")
    assert list(records.values_list("ends_at", flat=True)) == [at(2), at(3)]


def test_a_cancelled_window_is_charged_until_its_cancellation_and_use_after_on_demand(
    on_demand, reserved, alice, acme, operator, vision
):
    held = reserve(alice, acme, operator, start=1, end=5)
    ran(vision, start=1, end=3)
    services.usage_intervals_sync()  # attributed while the reservation holds
    Reservation.objects.filter(pk=held.pk).update(state="cancelled", cancelled_at=at(2))
    services.usage_meter(now=at(24))
    reserved = BillingRecord.objects.filter(charge="reservation")
    assert (
        list(reserved.values_list("ends_at", flat=True)),
        [charge for _, _, charge, _ in charges()],
    ) == ([at(2)], ["reserved_use", "on_demand"])


def test_reserved_capacity_does_not_unbalance_the_reconciliation(
    on_demand, reserved, alice, acme, operator, vision
):
    reserve(alice, acme, operator, start=1, end=2)
    ran(vision, start=1, end=3)
    services.usage_meter(now=at(12))
    result = services.usage_reconcile(starts_at=at(0), ends_at=at(24), now=at(12))
    assert result.balanced
