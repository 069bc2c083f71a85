"""The preemption contract's credits: lost work credited at the price billed, idle reserved GPUs
lent to others credited at a share of the reservation's price; once each, on the invoice."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import IntegrityError
from django.db.models import Sum

from billing import services
from billing.models import ContractCredit, InvoiceLine
from billing.services.metering import amount_seconds
from portal import clock
from scheduling import services as scheduling
from scheduling.models import Eviction, Placement, PriorityTier, Reservation, Workload
from scheduling.services.lifecycle import workloads_evict
from tenants.permissions import Caller

from ..factories import ProjectFactory
from .conftest import at, draft, evicted, period_over, ran

pytestmark = pytest.mark.django_db


def credited(kind=ContractCredit.Kind.LOST_WORK) -> tuple[Decimal, Decimal]:
    totals = ContractCredit.objects.filter(kind=kind).aggregate(
        seconds=Sum("quantity_seconds"), amount=Sum("amount")
    )
    return totals["seconds"] or Decimal(0), totals["amount"] or Decimal(0)


def credit_lines(invoice, kind) -> list[InvoiceLine]:
    return list(invoice.lines.filter(charge=kind))


# Lost work.


def test_work_lost_since_the_checkpoint_is_credited_at_the_price_billed(on_demand, vision):
    evicted(ran(vision, start=1, gpus=8), when=3.5, since=2)
    services.usage_meter(now=at(24))
    assert credited() == (Decimal(8 * 5400), Decimal("34.8"))


def test_the_lost_work_credit_is_a_negative_line_naming_the_workload_and_the_eviction(
    on_demand, acme, vision
):
    placement = ran(vision, start=1, gpus=8, name="llama-ft")
    evicted(placement, when=3.5, since=2, reason="reclaim")
    services.usage_meter(now=at(24))
    [line] = credit_lines(draft(acme), "lost_work_credit")
    assert line.amount == Decimal("-34.80")
    assert line.hours == Decimal("12.0000")
    assert "vision/llama-ft evicted" in line.description
    assert "reclaimed by the quota's owner" in line.description
    assert "43200 GPU-seconds" in line.description


def test_a_draft_subtracts_the_credit_from_its_subtotal(on_demand, acme, vision):
    evicted(ran(vision, start=1, gpus=8), when=3.5, since=2)
    services.usage_meter(now=at(24))
    # 2.5 hours of 8 H100s billed (58.00), 1.5 of them credited (34.80).
    assert draft(acme).subtotal == Decimal("23.20")


def test_lost_work_across_a_price_change_is_credited_at_each_price(on_demand, operator, vision):
    services.price_version_add(
        caller=Caller(user=operator),
        item=on_demand,
        unit_price=Decimal("4.0000"),
        effective_from=at(2.5),
    )
    evicted(ran(vision, start=1, gpus=2), when=3, since=2)
    services.usage_meter(now=at(24))
    # Half an hour of 2 GPUs at 2.90, half an hour at 4.00.
    assert credited() == (Decimal(7200), Decimal("6.9"))


def test_every_replica_is_credited_its_lost_work(on_demand, vision):
    first = ran(vision, start=1, gpus=4)
    Placement.objects.create(
        workload=first.workload,
        replica=1,
        node=first.node,
        gpu_indices=[4, 5, 6, 7],
        gpu_milli=1000,
        started_at=at(1),
        running_at=at(1.25),
        ended_at=at(2),
    )
    evicted(first, when=2, since=0.5)
    services.usage_meter(now=at(24))
    # Replica 0: 4 GPUs for an hour; replica 1: 4 GPUs for 45 minutes.
    assert credited()[0] == Decimal(4 * 3600 + 4 * 2700)


def test_work_of_a_tier_that_credits_no_lost_work_is_not_credited(on_demand, vision):
    evicted(ran(vision, start=1, gpus=8, tier="batch"), when=3, since=2)
    services.usage_meter(now=at(24))
    assert not ContractCredit.objects.exists()


def test_an_operator_turns_the_credit_on_for_a_tier(on_demand, vision):
    PriorityTier.objects.filter(name="batch").update(lost_work_credited=True)
    evicted(ran(vision, start=1, gpus=8, tier="batch"), when=3, since=2)
    services.usage_meter(now=at(24))
    assert credited()[0] == Decimal(8 * 3600)


def test_an_eviction_for_a_reason_outside_the_contract_is_not_credited(on_demand, vision):
    evicted(ran(vision, start=1, gpus=8), when=3, since=2, reason="")
    services.usage_meter(now=at(24))
    assert not ContractCredit.objects.exists()


def test_a_credit_waits_until_its_usage_is_rated(on_demand, vision):
    evicted(ran(vision, start=1, gpus=8), when=3.5, since=2)
    services.usage_intervals_sync()
    services.contract_credits_compute(now=at(24))
    assert not ContractCredit.objects.exists()
    services.usage_meter(now=at(24))
    assert credited()[0] == Decimal(8 * 5400)


def test_crediting_again_credits_nothing_twice_and_finishes_what_a_dead_worker_left(
    on_demand, vision
):
    evicted(ran(vision, start=1, gpus=8), when=3.5, since=2)
    second = evicted(ran(vision, start=1, gpus=2, name="other"), when=3, since=1)
    services.usage_meter(now=at(24))
    # A worker that died after the first eviction's transaction: the second's never committed.
    ContractCredit.objects.filter(eviction=second).delete()
    services.usage_meter(now=at(25))
    services.usage_meter(now=at(26))
    assert credited()[0] == Decimal(8 * 5400 + 2 * 7200)


def test_the_database_refuses_a_second_credit_for_one_lost_piece(on_demand, vision):
    evicted(ran(vision, start=1, gpus=8), when=3.5, since=2)
    services.usage_meter(now=at(24))
    piece = ContractCredit.objects.first()
    piece.pk = None
    with pytest.raises(IntegrityError):
        piece.save()


# Lending.


def reserve(user, organization, operator, *, start, end, gpus=8):
    [held] = scheduling.reservations_request(
        caller=Caller(user=user),
        organization=organization,
        request=scheduling.ReservationRequest(
            gpu_class="H100-80GB", gpus=gpus, starts_at=at(start), ends_at=at(end), pool="dgx-h100"
        ),
    )
    return scheduling.reservation_approve(caller=Caller(user=operator), reservation=held)


@pytest.fixture
def guests(globex):
    return ProjectFactory(organization=globex, slug="batchwork")


def filled(project, *, start, end, gpus):
    """``gpus`` GPUs of the dgx-h100 pool (64) used by ``project`` from ``start`` to ``end``."""
    for index in range(0, gpus, 8):
        name = f"guest-{start}-{index}"
        ran(project, start=start, end=end, gpus=min(gpus - index, 8), tier="batch", name=name)


def test_guests_beyond_the_unreserved_capacity_are_lent_the_reserved_idle_gpus(
    on_demand, reserved, alice, acme, operator, guests
):
    reserve(alice, acme, operator, start=1, end=3)
    filled(guests, start=1, end=2, gpus=64)
    services.usage_meter(now=at(24))
    # 56 GPUs are unreserved; the 8 beyond them sat on the reservation for an hour, credited at
    # half of 2.4650 per GPU-hour.
    assert credited(ContractCredit.Kind.LENDING) == (Decimal(8 * 3600), Decimal("9.86"))


def test_guests_within_the_unreserved_capacity_lend_nothing(
    on_demand, reserved, alice, acme, operator, guests
):
    reserve(alice, acme, operator, start=1, end=3)
    filled(guests, start=1, end=2, gpus=56)
    services.usage_meter(now=at(24))
    assert credited(ContractCredit.Kind.LENDING) == (Decimal(0), Decimal(0))


def test_the_owners_own_use_leaves_less_idle_to_lend(
    on_demand, reserved, alice, acme, operator, guests, vision
):
    reserve(alice, acme, operator, start=1, end=3)
    ran(vision, start=1, end=2, gpus=6)
    filled(guests, start=1, end=2, gpus=64)
    services.usage_meter(now=at(24))
    assert credited(ContractCredit.Kind.LENDING)[0] == Decimal(2 * 3600)


def test_the_excess_is_split_between_reservations_by_their_idle_gpus(
    on_demand, reserved, alice, acme, operator, bruno, globex, guests
):
    small = reserve(alice, acme, operator, start=1, end=2, gpus=8)
    large = reserve(bruno, globex, operator, start=1, end=2, gpus=24)
    other = ProjectFactory(organization=ProjectFactory().organization)
    filled(other, start=1, end=2, gpus=64)
    services.usage_meter(now=at(24))

    def lent(reservation):
        return ContractCredit.objects.get(reservation=reservation).quantity_seconds

    # 32 unreserved, 32 guests beyond them: 8 on acme's idle 8, 24 on globex's idle 24.
    assert (lent(small), lent(large)) == (Decimal(8 * 3600), Decimal(24 * 3600))


def test_the_lending_credit_is_a_line_with_the_hours_lent(
    on_demand, reserved, alice, acme, operator, guests
):
    reserve(alice, acme, operator, start=1, end=3)
    filled(guests, start=1, end=2, gpus=64)
    services.usage_meter(now=at(24))
    [line] = credit_lines(draft(acme), "lending_credit")
    assert (line.hours, line.amount) == (Decimal("8.0000"), Decimal("-9.86"))
    assert "8 GPU-hours lent" in line.description


def test_guests_pay_their_own_price(on_demand, reserved, alice, acme, operator, globex, guests):
    reserve(alice, acme, operator, start=1, end=3)
    filled(guests, start=1, end=2, gpus=64)
    services.usage_meter(now=at(24))
    assert draft(globex).subtotal == Decimal("185.60")  # 64 GPU-hours at 2.90


def test_lending_is_credited_once_an_hour_however_often_it_runs(
    on_demand, reserved, alice, acme, operator, guests
):
    reserve(alice, acme, operator, start=1, end=3)
    filled(guests, start=1, end=2.5, gpus=64)
    for hours in (1.5, 2.2, 2.7, 24, 25):
        services.usage_meter(now=at(hours))
    assert ContractCredit.objects.filter(kind="lending_credit").count() == 2
    assert credited(ContractCredit.Kind.LENDING)[0] == Decimal(8 * 5400)


def test_no_lending_credit_when_the_percentage_is_zero(
    on_demand, reserved, alice, acme, operator, guests, settings
):
    settings.PORTAL_LENDING_CREDIT_PERCENT = Decimal(0)
    reserve(alice, acme, operator, start=1, end=3)
    filled(guests, start=1, end=2, gpus=64)
    services.usage_meter(now=at(24))
    assert not ContractCredit.objects.exists()


def test_a_cancelled_reservation_lends_only_until_its_cancellation(
    on_demand, reserved, alice, acme, operator, guests
):
    held = reserve(alice, acme, operator, start=1, end=3)
    Reservation.objects.filter(pk=held.pk).update(
        state=Reservation.State.CANCELLED, cancelled_at=at(1.5)
    )
    filled(guests, start=1, end=3, gpus=64)
    services.usage_meter(now=at(24))
    assert credited(ContractCredit.Kind.LENDING)[0] == Decimal(8 * 1800)


def test_lent_seconds_are_exact_to_the_microsecond(
    on_demand, reserved, alice, acme, operator, guests
):
    reserve(alice, acme, operator, start=1, end=3)
    filled(guests, start=1, end=2, gpus=56)
    extra = ran(guests, start=1, end=2, gpus=1, tier="batch", name="extra")
    Placement.objects.filter(pk=extra.pk).update(running_at=at(1) + timedelta(microseconds=7))
    services.usage_meter(now=at(24))
    assert credited(ContractCredit.Kind.LENDING)[0] == Decimal("3599.999993")


def test_an_eviction_by_the_scheduler_is_credited_from_its_checkpoint(on_demand, vision):
    clock.advance(seconds=(at(4) - clock.now()).total_seconds())
    placement = ran(vision, start=1, gpus=8)
    checkpoint = at(2) + timedelta(microseconds=250)
    Workload.objects.filter(pk=placement.workload_id).update(
        started_at=placement.running_at, last_checkpoint_at=checkpoint
    )
    services.usage_meter()  # the beat's pass saw it running
    key = str(placement.workload_id)
    workloads_evict(
        reasons={key: "Evicted for a higher tier."},
        preempted_by={key: None},
        event_data={key: {"reason": "priority"}},
    )
    services.usage_meter()
    eviction = Eviction.objects.get()
    assert (eviction.lost_since, credited()[0]) == (
        checkpoint,
        amount_seconds(8, checkpoint, eviction.at),
    )


def test_the_issued_invoice_keeps_the_credit_line(lost_work_invoice, operator):
    period_over(lost_work_invoice)
    issued = services.invoice_issue(caller=Caller(user=operator), invoice=lost_work_invoice)
    [line] = credit_lines(issued, "lost_work_credit")
    assert (issued.state, line.amount, issued.subtotal) == (
        "issued",
        Decimal("-34.80"),
        Decimal("23.20"),
    )
