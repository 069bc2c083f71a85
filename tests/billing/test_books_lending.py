"""The books and the lending credit read one decomposition of the pool: on random histories of
reservations and of owners' and guests' use, each reservation's *reserved and lent* time in
the books is exactly the time the lending credit credits it, to the milli-GPU-microsecond."""

from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from billing import services
from billing.allocation import MILLI, SLICES_PER_GPU
from billing.models import BillingRecord, ContractCredit, UsageInterval
from billing.selectors import pool_allocation
from scheduling.models import Node, NodeAvailability, Placement, Reservation, Workload

from ..factories import ProjectFactory
from .conftest import at, ran
from .histories import USES, WINDOW, availability_recorded, reservation_approved, uses_run

pytestmark = pytest.mark.django_db

PROPERTY = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture
def one_node(cluster):
    """dgx-h100 cut to one node of 8 GPUs, cordoned so in the books' history as in the
    credit's capacity: guests soon overflow what is unreserved."""
    pool_nodes = Node.objects.filter(pool__name="dgx-h100")
    pool_nodes.exclude(name="dgx-h100-01").update(cordoned=True)
    NodeAvailability.objects.filter(node__in=pool_nodes).update(starts_at=at(-48))
    NodeAvailability.objects.filter(node__in=pool_nodes).exclude(node__name="dgx-h100-01").update(
        state=NodeAvailability.State.CORDONED
    )
    return Node.objects.get(name="dgx-h100-01").pool


@pytest.mark.slow
@PROPERTY
@given(
    windows=st.lists(
        st.tuples(*WINDOW, st.booleans()),  # and the project's (or the organization's)
        min_size=1,
        max_size=3,
    ),
    uses=USES,
)
def test_reserved_and_lent_in_the_books_is_what_the_lending_credit_credits(
    on_demand, reserved, one_node, acme, globex, vision, windows, uses
):
    for model in (ContractCredit, BillingRecord, UsageInterval, Placement, Workload, Reservation):
        model.objects.all().delete()
    guests = ProjectFactory(organization=globex)
    for start, length, gpus, of_project in windows:
        reservation_approved(
            organization=acme,
            project=vision if of_project else None,
            gpu_class=on_demand.gpu_class,
            pool=one_node,
            start=start,
            length=length,
            gpus=gpus,
        )
    uses_run(uses, owner=vision, guest=guests)
    services.usage_meter(now=at(8))

    allocation = pool_allocation(pool=one_node, starts_at=at(-1), ends_at=at(8))

    for reservation in Reservation.objects.all():
        credited = credited_seconds(reservation)
        lent = allocation.reservations[str(reservation.pk)]["lent"]
        assert Decimal(lent) / (SLICES_PER_GPU * MILLI * 10**6) == credited
    assert (
        sum(p["lent"] for p in allocation.reservations.values())
        == (allocation.totals["reserved_lent"])
    )


def four_gpus_for_two_hours(organization, pool) -> Reservation:
    return Reservation.objects.create(
        organization=organization,
        gpu_class=pool.gpu_class,
        pool=pool,
        gpus=4,
        starts_at=at(0),
        ends_at=at(2),
        state=Reservation.State.APPROVED,
    )


def credited_seconds(reservation) -> Decimal:
    """The lent GPU-seconds the lending credit credited the reservation."""
    return sum(
        (c.quantity_seconds for c in ContractCredit.objects.filter(reservation=reservation)),
        Decimal(0),
    )


def test_a_guests_excess_on_an_idle_reservation_is_lent_in_the_books_and_credited(
    on_demand, reserved, one_node, acme, globex
):
    reservation = four_gpus_for_two_hours(acme, one_node)
    ran(ProjectFactory(organization=globex), start=0, end=2, gpus=8)
    services.usage_meter(now=at(8))

    allocation = pool_allocation(pool=one_node, starts_at=at(0), ends_at=at(2))

    credited = credited_seconds(reservation)
    assert credited == 4 * 7200
    assert allocation.reservations[str(reservation.pk)]["lent"] == (
        4 * 7200 * SLICES_PER_GPU * MILLI * 10**6
    )


def test_an_outage_lends_nothing_in_the_books_nor_in_the_credit(
    on_demand, reserved, one_node, acme, globex
):
    reservation = four_gpus_for_two_hours(acme, one_node)
    ran(ProjectFactory(organization=globex), start=0, end=2, gpus=8)
    # The pool's one node is not ready for the first hour of the reservation.
    node = Node.objects.get(name="dgx-h100-01")
    availability_recorded(
        node,
        [(at(0), NodeAvailability.State.NOT_READY), (at(1), NodeAvailability.State.AVAILABLE)],
    )
    services.usage_meter(now=at(8))

    allocation = pool_allocation(pool=one_node, starts_at=at(0), ends_at=at(2))

    credited = credited_seconds(reservation)
    assert credited == 4 * 3600
    assert allocation.totals["reserved_lent"] == 4 * 3600 * SLICES_PER_GPU * MILLI * 10**6
    assert (
        allocation.reservations[str(reservation.pk)]["lent"] == allocation.totals["reserved_lent"]
    )
