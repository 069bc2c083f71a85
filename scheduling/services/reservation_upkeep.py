"""Reservations as time passes and capacity changes (the beat task's work): approved ones
open, open ones complete, requested ones whose window began unapproved expire; and the holding
ones are re-checked against what their pools have now, each marked short by what is missing
or covered again."""

from datetime import datetime

from django.db import transaction
from django.db.models import Q

from portal import clock
from portal.events import Event, publish
from tenants.services import audit_record

from ..models import NodePool, Reservation
from ..selectors import pool_capacity
from .reservations import RESERVATION_COVERED, RESERVATION_SHORT, _payload


def reservations_advance(*, now=None) -> dict[str, int]:
    """Move reservations on with time (the beat task): approved ones open, open ones complete,
    requested ones whose window began unapproved expire; then re-check what the pools still
    have (``reservations_recheck``). Counts per new state, and of changed shortfalls."""
    now = now or clock.now()
    moves = {
        Reservation.State.COMPLETED: Q(state=Reservation.State.ACTIVE, ends_at__lte=now)
        | Q(state=Reservation.State.APPROVED, ends_at__lte=now),
        Reservation.State.ACTIVE: Q(state=Reservation.State.APPROVED, starts_at__lte=now),
        Reservation.State.EXPIRED: Q(state=Reservation.State.REQUESTED, starts_at__lte=now),
    }
    moved = {}
    with transaction.atomic():
        for state, condition in moves.items():
            ids = list(Reservation.objects.filter(condition).values_list("pk", flat=True))
            Reservation.objects.filter(pk__in=ids).update(state=state)
            for reservation_id in ids:
                publish(Event.RESERVATION_CHANGED, reservation_id=str(reservation_id), change=state)
            moved[state.value] = len(ids)
    moved["shortfall_changed"] = reservations_recheck(now=now)
    return moved


def _peak(
    held: list[tuple[datetime, datetime, int]], starts_at: datetime, ends_at: datetime
) -> int:
    """The most GPUs ``held`` takes at any instant of [starts_at, ends_at)."""
    inside = [
        (max(s, starts_at), min(e, ends_at), g) for s, e, g in held if s < ends_at and e > starts_at
    ]
    return max(
        (sum(g for s, e, g in inside if s <= instant < e) for instant, _, _ in inside), default=0
    )


def reservations_recheck(*, now=None) -> int:
    """Check the holding reservations against what their pools have now (nodes removed or
    cordoned since they were accepted). Approved ones before requested ones, earliest asked
    first, keep their GPUs; a reservation the rest no longer covers is marked short by what is
    missing, audited, and its requester and the operators are mailed; one covered again is
    cleared. The number of reservations whose shortfall changed."""
    now = now or clock.now()
    changed = 0
    with transaction.atomic():
        holding = list(
            Reservation.objects.filter(state__in=Reservation.HOLDING_STATES, ends_at__gt=now)
            .select_related("organization", "gpu_class", "pool")
            .order_by("requested_at", "pk")
        )
        pools = {r.pool_id for r in holding}
        # The same locks as a request's: a re-check and a request never interleave.
        for pool in NodePool.objects.select_for_update().filter(pk__in=pools).order_by("pk"):
            for profile in sorted({r.mig_profile for r in holding if r.pool_id == pool.pk}):
                mine = sorted(
                    (r for r in holding if r.pool_id == pool.pk and r.mig_profile == profile),
                    key=lambda r: r.state == Reservation.State.REQUESTED,
                )
                changed += _recheck(mine, pool_capacity(pool, profile), now)
    return changed


def _recheck(reservations: list[Reservation], capacity: int, now: datetime) -> int:
    """Mark each of ``reservations`` (of one pool and resource, in the order that keeps its
    capacity first) short by what ``capacity`` no longer covers; how many changed."""
    changed = 0
    held: list[tuple[datetime, datetime, int]] = []
    for reservation in reservations:
        start = max(reservation.starts_at, now)
        room = max(0, capacity - _peak(held, start, reservation.ends_at))
        short = max(0, reservation.gpus - room)
        held.append((start, reservation.ends_at, reservation.gpus - short))
        if short != reservation.short_gpus:
            _mark_short(reservation, short)
            changed += 1
    return changed


def _mark_short(reservation: Reservation, short: int) -> None:
    was = reservation.short_gpus
    reservation.short_gpus = short
    reservation.save(update_fields=["short_gpus"])
    audited = audit_record(
        caller=None,
        organization=reservation.organization,
        action="reservation.short" if short else "reservation.covered",
        target=reservation,
        payload=_payload(reservation) | {"short_gpus": short, "was_short_gpus": was},
    )
    # A shortfall may change again (and be covered again): each change is its own event.
    publish(
        Event.RESERVATION_CHANGED,
        reservation_id=str(reservation.pk),
        change=RESERVATION_SHORT if short else RESERVATION_COVERED,
        occurrence=str(audited.pk),
        short_gpus=short,
    )
