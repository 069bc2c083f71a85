"""The preemption contract's credits, computed after each rating pass (``rating.usage_meter``)
from what metering recorded, idempotently: each piece has a deterministic key, unique in the
database (``ContractCredit``), so a rerun, or one after a worker died half way, credits
nothing twice; an eviction's pieces are written in one transaction, all or none.

- Lost work: an eviction by preemption, reclaim or a reservation's drain (``CREDITED_REASONS``;
  not a cancellation, a failure or an operator's requeue, which write no eviction) of work
  whose tier credits lost work: every on-demand billing record of the workload's replicas that
  ran at the eviction, over [its last checkpoint or start, the eviction), is credited at the
  unit price it billed, piece by piece. It waits until those records are all rated and priced.
- Lending: each hour of a reservation's window, the milli-GPU-microseconds others' work ran on
  its idle GPUs (``billing.lending``), at PORTAL_LENDING_CREDIT_PERCENT of its price per
  GPU-second; one row per hour, lent or not, which is also how far it is credited.
"""

from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal, localcontext
from itertools import pairwise

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q

from portal import clock
from scheduling import selectors as scheduling_selectors
from scheduling.models import Eviction, Reservation

from .. import lending, selectors
from ..models import BillingRecord, ContractCredit, UsageInterval
from ..pricing import RECORD_PLACES, hour_floor, hours_between, reserved_unit_price
from .metering import reservations_charged, usage_piece

# The engine's reasons for an eviction the contract credits: a higher tier's preemption, a
# quota reclaim (by guarantee or fair share), a reservation's drain before its window.
CREDITED_REASONS = frozenset({"priority", "reclaim", "fair-share", "reservation"})
# Older evictions belong to months already invoiced: not looked at again.
EVICTIONS_LOOKBACK = timedelta(days=62)
MILLI = 1000


def contract_credits_compute(*, now: datetime | None = None) -> dict[str, int]:
    """Credit what is due and not yet credited: the pieces written, of each kind."""
    now = now or clock.now()
    return {"lost_work": lost_work_credit(now=now), "lent": lending_credit(now=now)}


def lost_work_credit(*, now: datetime) -> int:
    """Credit the evictions since ``EVICTIONS_LOOKBACK`` that have no credit yet and are ready
    (their records rated and priced); the pieces written."""
    evictions = scheduling_selectors.evictions_since(since=now - EVICTIONS_LOOKBACK).filter(
        ~Exists(ContractCredit.objects.filter(eviction=OuterRef("pk"))),
        reason__in=CREDITED_REASONS,
        workload__tier__lost_work_credited=True,
        lost_since__isnull=False,
        lost_since__lt=F("at"),
    )
    written = 0
    for eviction in evictions:
        pieces = _lost_pieces(eviction)
        if pieces:
            with transaction.atomic():
                written += len(ContractCredit.objects.bulk_create(pieces, ignore_conflicts=True))
    return written


def _lost_pieces(eviction: Eviction) -> list[ContractCredit] | None:
    """The credit's pieces, or None while its usage is not all rated and priced."""
    at, since = eviction.at, eviction.lost_since
    intervals = {
        i.pk: i
        for i in UsageInterval.objects.filter(
            Q(ended_at__isnull=True) | Q(ended_at__gte=at),
            workload=eviction.workload_id,
            started_at__lt=at,
        )
    }
    # Intervals are synced from placements just before, in the same pass (``usage_meter``).
    if any(
        i.ended_at is None or i.rated_until is None or i.rated_until < i.ended_at
        for i in intervals.values()
    ):
        return None
    records = list(
        BillingRecord.objects.filter(
            interval__in=list(intervals), starts_at__lt=at, ends_at__gt=since
        ).order_by("interval", "starts_at")
    )
    on_demand = [r for r in records if r.charge == BillingRecord.Charge.ON_DEMAND]
    if any(r.unit_price is None for r in on_demand):
        return None
    pieces = []
    for record in on_demand:
        # At the price it billed, over the part of it in [since, at).
        piece, amount = usage_piece(
            intervals[record.interval_id],
            max(record.starts_at, since),
            min(record.ends_at, at),
            record.unit_price,
        )
        pieces.append(
            ContractCredit(
                kind=ContractCredit.Kind.LOST_WORK,
                eviction=eviction,
                interval_id=record.interval_id,
                at=at,
                amount=amount,
                **piece,
            )
        )
    return pieces


def lending_credit(*, now: datetime) -> int:
    """Credit each priced reservation's whole hours (or the part of one inside its window) up
    to the last whole hour; the pieces written."""
    percent = settings.PORTAL_LENDING_CREDIT_PERCENT
    if percent <= 0:
        return 0
    horizon = hour_floor(now)
    windows = reservations_charged(
        before=horizon, pieces=ContractCredit.objects.filter(kind=ContractCredit.Kind.LENDING)
    ).select_related("organization", "pool")
    written = 0
    for reservation in windows:
        start = reservation.pieces_to or reservation.starts_at
        until = min(reservation.held_until, horizon)
        if until <= start:
            continue
        _, item, value = selectors.reservation_terms(reservation)
        if item is None or value <= 0:
            continue  # nothing was paid for it (yet): nothing to credit a share of
        pieces = [
            _lent_piece(reservation, piece_start, piece_end, value=value, percent=percent)
            for piece_start, piece_end in pairwise([start, *hours_between(start, until), until])
        ]
        with transaction.atomic():
            written += len(ContractCredit.objects.bulk_create(pieces, ignore_conflicts=True))
    return written


def _lent_piece(
    reservation: Reservation, start: datetime, end: datetime, *, value: Decimal, percent: Decimal
) -> ContractCredit:
    """The reservation's lending over [start, end), at ``percent`` of its ``value`` (the whole
    window's price) per reserved GPU-second."""
    # A piece starts and ends on whole hours or on its window's edges, which cut the pool's
    # time anyway: whichever reservation of the pool asks, each span is split the same.
    micro = lending.lent(**_pool_state(reservation, start, end), start=start, end=end)
    lent = micro.get(str(reservation.pk), 0)
    window = (reservation.ends_at - reservation.starts_at) // lending.MICROSECOND
    with localcontext(prec=60):
        amount = (percent * value * lent / (100 * MILLI * reservation.gpus * window)).quantize(
            RECORD_PLACES, ROUND_HALF_UP
        )
    unit_price = reserved_unit_price(
        value, reservation.gpus, reservation.ends_at - reservation.starts_at
    )
    return ContractCredit(
        kind=ContractCredit.Kind.LENDING,
        organization_id=reservation.organization_id,
        project_id=reservation.project_id,
        reservation=reservation,
        gpu_class_id=reservation.gpu_class_id,
        mig_profile=reservation.mig_profile,
        resource=UsageInterval.Resource.MIG
        if reservation.mig_profile
        else UsageInterval.Resource.GPUS,
        at=start,
        starts_at=start,
        ends_at=end,
        quantity_seconds=Decimal(lent) / (MILLI * 10**6),
        unit_price=(unit_price * percent / 100).quantize(Decimal("0.0001")),
        amount=amount,
    )


def _pool_state(reservation: Reservation, start: datetime, end: datetime) -> dict:
    """What ``lending.lent`` reads of the reservation's pool over [start, end), in milli-units
    of its resource: the pool's capacity from its nodes' availability history (as the books
    read it), the reservations of that resource holding capacity there, and the usage
    intervals of that resource that ran there."""
    profile = reservation.mig_profile
    windows = Reservation.objects.filter(
        Q(state__in=Reservation.BILLED_STATES) | Q(state=Reservation.State.CANCELLED),
        pool=reservation.pool_id,
        mig_profile=profile,
        starts_at__lt=end,
        ends_at__gt=start,
    )
    holdings = [
        lending.Holding(
            key=str(r.pk),
            organization=r.organization_id,
            project=r.project_id,
            amount=r.held_gpus * MILLI,
            starts_at=r.starts_at,
            ends_at=r.held_until,
        )
        for r in windows
        if r.held_until > start
    ]
    intervals = UsageInterval.objects.filter(
        Q(ended_at__isnull=True) | Q(ended_at__gt=start),
        pool=reservation.pool.name,
        started_at__lt=end,
    )
    if profile:
        intervals = intervals.filter(resource=UsageInterval.Resource.MIG, mig_profile=profile)
    else:
        intervals = intervals.exclude(resource=UsageInterval.Resource.MIG)
    uses = [
        lending.Use(
            organization=organization,
            project=project,
            # A share's amount is milli-GPU already.
            amount=amount if resource == UsageInterval.Resource.SHARED else amount * MILLI,
            starts_at=started_at,
            ends_at=ended_at,
        )
        for organization, project, resource, amount, started_at, ended_at in intervals.values_list(
            "organization_id", "project_id", "resource", "amount", "started_at", "ended_at"
        )
    ]
    # The nodes' availability history, as the books read it: an outage lends nothing.
    capacity = selectors.pool_capacity_spans(pool=reservation.pool, starts_at=start, ends_at=end)
    return {"capacity": capacity.get(profile, []), "holdings": holdings, "uses": uses}
