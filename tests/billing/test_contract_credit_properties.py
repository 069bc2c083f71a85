"""Properties of the preemption contract's credits on random histories of replicas, checkpoints,
evictions, price changes, guests' and owners' use, credited at random moments: no second is
credited twice and none is lost."""

from datetime import timedelta
from decimal import Decimal
from itertools import pairwise

import pytest
from django.db.models import Sum
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from billing import services
from billing.models import BillingRecord, ContractCredit, UsageInterval
from portal import clock
from scheduling import services as scheduling_services
from scheduling.models import Eviction, Node, Placement, Reservation, Workload
from tenants.permissions import Caller

from ..factories import ProjectFactory
from .conftest import at, ran
from .histories import USES, WINDOW, reservation_approved, uses_run

pytestmark = pytest.mark.django_db

PROPERTY = settings(
    deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
MICRO = timedelta(microseconds=1)


def _forget_usage():
    ContractCredit.objects.all().delete()
    BillingRecord.objects.all().delete()
    UsageInterval.objects.all().delete()
    Eviction.objects.all().delete()
    Placement.objects.all().delete()
    Workload.objects.all().delete()
    Reservation.objects.all().delete()


def _meter_at(stops_minutes, until):
    """Meter at each stop before ``until``, then twice after it."""
    for minutes in sorted(stops_minutes):
        if at(minutes / 60) < until:
            services.usage_meter(now=at(minutes / 60))
    services.usage_meter(now=until + timedelta(hours=1))
    services.usage_meter(now=until + timedelta(hours=2))


@pytest.mark.slow
@PROPERTY
@given(
    replicas=st.lists(
        st.tuples(
            st.integers(min_value=1, max_value=8),  # GPUs
            st.integers(min_value=0, max_value=600),  # running from, minutes
            st.integers(min_value=0, max_value=999_999),  # and microseconds
        ),
        min_size=1,
        max_size=3,
    ),
    evicted_after_minutes=st.integers(min_value=1, max_value=60 * 30),
    checkpoint_minutes=st.one_of(st.none(), st.integers(min_value=0, max_value=60 * 40)),
    change_minutes=st.lists(st.integers(min_value=1, max_value=60 * 40), max_size=2),
    stops=st.lists(st.integers(min_value=0, max_value=60 * 40), max_size=3),
)
def test_lost_work_credits_each_lost_second_once_at_its_price(
    on_demand,
    operator,
    vision,
    replicas,
    evicted_after_minutes,
    checkpoint_minutes,
    change_minutes,
    stops,
):
    _forget_usage()
    for minutes in sorted(set(change_minutes)):
        if not on_demand.prices.filter(effective_from=at(minutes / 60)).exists():
            services.price_version_add(
                caller=Caller(user=operator),
                item=on_demand,
                unit_price=Decimal(minutes % 5 + 1),
                effective_from=at(minutes / 60),
            )
    first = ran(vision, start=0, gpus=replicas[0][0])
    workload = first.workload
    starts = [at(m / 60) + s * MICRO for _, m, s in replicas]
    evicted_at = min(starts) + timedelta(minutes=evicted_after_minutes)
    for index, (gpus, _, _) in enumerate(replicas):
        placement = first if index == 0 else Placement(workload=workload, replica=index)
        placement.node = first.node
        placement.gpu_indices = list(range(gpus))
        placement.gpu_milli = 1000
        placement.started_at = placement.running_at = starts[index]
        placement.ended_at = max(evicted_at, starts[index])
        placement.save()
    # The checkpoint anywhere: before the start, the whole run is lost.
    since = min(starts)
    if checkpoint_minutes is not None:
        since = max(since, min(at(checkpoint_minutes / 60), evicted_at))
    Eviction.objects.create(
        workload=workload,
        at=evicted_at,
        reason="priority",
        notice_seconds=30,
        gpu_class=workload.gpu_class,
        lost_since=since,
        requeued=False,
    )
    _meter_at(stops, evicted_at)

    expected = sum(
        gpus * Decimal((evicted_at - max(start, since)) // MICRO) / 10**6
        for (gpus, _, _), start in zip(replicas, starts, strict=True)
        if start < evicted_at
    )
    pieces = list(ContractCredit.objects.order_by("interval", "starts_at"))
    assert sum((p.quantity_seconds for p in pieces), Decimal(0)) == expected
    # None counted twice: each replica's pieces follow each other without overlap.
    for interval in {p.interval_id for p in pieces}:
        mine = [p for p in pieces if p.interval_id == interval]
        assert all(a.ends_at == b.starts_at for a, b in pairwise(mine))
    # At the price of the record each comes from: all of its cost when it is all of it.
    for piece in pieces:
        record = BillingRecord.objects.get(
            interval=piece.interval_id, starts_at__lte=piece.starts_at, ends_at__gt=piece.starts_at
        )
        assert piece.unit_price == record.unit_price
        if (piece.starts_at, piece.ends_at) == (record.starts_at, record.ends_at):
            assert piece.amount == record.cost


@pytest.fixture
def small_pool(cluster):
    """The dgx-h100 pool cut to one node of 8 GPUs: guests soon overflow what is unreserved.
    Cordoned in the nodes' availability history too, which the credit reads."""
    Node.objects.filter(pool__name="dgx-h100").exclude(name="dgx-h100-01").update(cordoned=True)
    scheduling_services.node_availability_record(now=clock.now())


@pytest.mark.slow
@PROPERTY
@given(
    windows=st.lists(
        st.tuples(*WINDOW),
        min_size=1,
        max_size=2,
    ),
    uses=USES,
    stops=st.lists(st.integers(min_value=0, max_value=60 * 6), max_size=3),
)
def test_lent_seconds_are_the_guests_excess_on_reserved_idle_gpus_exactly(
    on_demand, reserved, small_pool, alice, acme, operator, globex, vision, windows, uses, stops
):
    _forget_usage()
    guests = ProjectFactory(organization=globex)
    pool = Node.objects.get(name="dgx-h100-01").pool
    held = [
        reservation_approved(
            organization=acme,
            gpu_class=on_demand.gpu_class,
            pool=pool,
            start=start,
            length=length,
            gpus=gpus,
        )
        for start, length, gpus in windows
    ]
    uses_run(uses, owner=vision, guest=guests)
    spans = [(who, start, start + length, gpus) for who, start, length, gpus in uses]
    last = max([s + n for s, n, _ in windows] + [e for _, _, e, _ in spans])
    _meter_at(stops, at(last / 60))

    # Minute by minute (every edge is on a whole minute): what the rule lends in all.
    lent_minutes = idle_minutes = guest_minutes = 0
    for minute in range(last):
        active = [w for w in windows if w[0] <= minute < w[0] + w[1]]
        running = [u for u in spans if u[1] <= minute < u[2]]
        owner = sum(g for who, _, _, g in running if who == "owner")
        guest = sum(g for who, _, _, g in running if who == "guest")
        reserved_gpus = sum(g for _, _, g in active)
        idle = max(reserved_gpus - owner, 0)
        guest += max(owner - reserved_gpus, 0)  # the owner's use beyond its reservations
        lent_minutes += min(max(guest - max(8 - reserved_gpus, 0), 0), idle)
        idle_minutes += idle
        guest_minutes += guest
    lent = ContractCredit.objects.aggregate(total=Sum("quantity_seconds"))["total"] or 0
    assert lent == Decimal(lent_minutes * 60)
    assert lent <= idle_minutes * 60
    assert lent <= guest_minutes * 60
    # Each hour of each window once, never more.
    for reservation in held:
        hours = ContractCredit.objects.filter(reservation=reservation).values_list(
            "starts_at", flat=True
        )
        assert len(hours) == len(set(hours))
