"""Reads of reservations: an organization's, each pool's timeline as it may see it, and the
load on a pool's resource over a window with where a request would fall short and the nearest
windows that would fit (what a reservation request checks under its pool locks)."""

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from itertools import pairwise

from django.db.models import QuerySet

from portal.bounds import booking_horizon
from portal.db import one_or_not_found
from tenants.models import Organization
from tenants.permissions import Action, Caller, authorize, require_operator

from ..models import NodePool, Reservation
from .catalog import pool_list, pool_nodes, pool_resources

# How far from the asked window the nearest feasible windows are looked for.
SEARCH_SPAN = timedelta(weeks=8)


def reservation_list(*, caller: Caller, organization: Organization) -> QuerySet[Reservation]:
    authorize(caller=caller, organization=organization, action=Action.RESERVATION_VIEW)
    return Reservation.objects.filter(organization=organization).select_related(
        "organization", "project", "gpu_class", "pool", "requested_by"
    )


def reservations_on_record(*, caller: Caller, organization: Organization) -> QuerySet[Reservation]:
    """The organization's reservations but those that completed or expired, the soonest
    first."""
    return (
        reservation_list(caller=caller, organization=organization)
        .exclude(state__in=[Reservation.State.COMPLETED, Reservation.State.EXPIRED])
        .order_by("starts_at")
    )


def reservations_ahead(
    *, caller: Caller, organization: Organization, now: datetime
) -> QuerySet[Reservation]:
    """The organization's reservations not yet over that are asked for or hold capacity, the
    soonest first."""
    return (
        reservation_list(caller=caller, organization=organization)
        .filter(
            ends_at__gt=now,
            state__in=[Reservation.State.REQUESTED, *Reservation.SCHEDULED_STATES],
        )
        .order_by("starts_at")
    )


def reservation_get(*, caller: Caller, organization: Organization, pk) -> Reservation:
    """One of the organization's reservations; any other id (malformed, unknown, another
    tenant's) is a 404."""
    return one_or_not_found(
        reservation_list(caller=caller, organization=organization), pk, "reservation"
    )


def reservation_for_operator(*, caller: Caller, pk) -> Reservation:
    """Any organization's reservation, for an operator's decision."""
    require_operator(caller)
    return one_or_not_found(Reservation.objects.select_related("organization"), pk, "reservation")


@dataclass(frozen=True)
class ReservedBlock:
    """A reservation on a pool's timeline: the caller's own in detail, others' anonymous."""

    starts_at: datetime
    ends_at: datetime
    gpus: int
    own: bool
    reservation: Reservation | None


@dataclass(frozen=True)
class FreeDay:
    day: date
    free_gpus: int


@dataclass(frozen=True)
class PoolTimeline:
    pool: NodePool
    # "" for whole GPUs, else the MIG profile whose instances the row counts.
    mig_profile: str
    capacity: int
    blocks: list[ReservedBlock]
    # The least free GPUs over each day of the span: what a new reservation could still get.
    free_by_day: list[FreeDay]


def _holding(
    pool: NodePool, mig_profile: str, starts_at: datetime, ends_at: datetime
) -> QuerySet[Reservation]:
    """The requested, approved and active reservations of the pool's whole GPUs (``""``) or
    instances of ``mig_profile`` that hold them at some instant of [starts_at, ends_at)."""
    return _holding_any(starts_at, ends_at).filter(pool=pool, mig_profile=mig_profile)


def _holding_any(starts_at: datetime, ends_at: datetime) -> QuerySet[Reservation]:
    """``_holding`` of every pool and resource at once."""
    return Reservation.objects.filter(
        state__in=Reservation.HOLDING_STATES, starts_at__lt=ends_at, ends_at__gt=starts_at
    )


def reservation_timeline(
    *, caller: Caller, organization: Organization, now: datetime, days: int
) -> list[PoolTimeline]:
    """Per GPU pool and reservable resource (whole GPUs, each MIG profile its nodes offer),
    the reservations holding it from ``now`` to the end of the ``days`` calendar days that
    start with today, in the organization's time zone, and the free capacity of each such day
    (today's from now on), so that a free slot is visible before asking for it."""
    authorize(caller=caller, organization=organization, action=Action.RESERVATION_VIEW)
    days_of = calendar_days(now=now, zone=organization.zone, days=days)
    starts_at, ends_at = days_of[0][1], days_of[-1][2]
    # Three queries however many pools: the nodes, the pools, the reservations.
    nodes = pool_nodes()
    holding = defaultdict(list)
    for reservation in _holding_any(starts_at, ends_at).select_related("gpu_class", "project"):
        holding[reservation.pool_id, reservation.mig_profile].append(reservation)
    timelines = []
    rows = [
        (pool, *resource)
        for pool in pool_list()
        for resource in pool_resources(pool, nodes[pool.pk])
    ]
    for pool, mig_profile, capacity in rows:
        blocks = [
            ReservedBlock(
                starts_at=r.starts_at,
                ends_at=r.ends_at,
                gpus=r.gpus,
                own=r.organization_id == organization.pk,
                reservation=r if r.organization_id == organization.pk else None,
            )
            for r in holding[pool.pk, mig_profile]
        ]
        free_by_day = []
        for day, day_start, day_end in days_of:
            edges = sorted(
                {day_start} | {b.starts_at for b in blocks if day_start < b.starts_at < day_end}
            )
            peak = max(
                sum(b.gpus for b in blocks if b.starts_at <= edge < b.ends_at) for edge in edges
            )
            free_by_day.append(FreeDay(day, capacity - peak))
        timelines.append(PoolTimeline(pool, mig_profile, capacity, blocks, free_by_day))
    return timelines


def calendar_days(
    *, now: datetime, zone: tzinfo, days: int
) -> list[tuple[date, datetime, datetime]]:
    """The ``days`` calendar days in ``zone`` from the one ``now`` falls on: each as its date
    and its span in UTC, from midnight to midnight (23 or 25 hours across a daylight-saving
    change), today's from ``now``."""
    today = now.astimezone(zone).date()
    midnights = [
        datetime.combine(today + timedelta(days=k), time.min, tzinfo=zone).astimezone(UTC)
        for k in range(days + 1)
    ]
    return [
        (today + timedelta(days=k), max(midnights[k], now), midnights[k + 1]) for k in range(days)
    ]


@dataclass(frozen=True)
class Shortfall:
    """Part of a window where the pool lacks ``gpus`` GPUs for a request."""

    starts_at: datetime
    ends_at: datetime
    gpus: int

    def as_dict(self) -> dict:
        return {
            "starts_at": self.starts_at.isoformat(),
            "ends_at": self.ends_at.isoformat(),
            "gpus_short": self.gpus,
        }


def pool_load(
    pool: NodePool,
    starts_at: datetime,
    ends_at: datetime,
    mig_profile: str = "",
    also: tuple[tuple[datetime, datetime, int], ...] = (),
) -> list[tuple[datetime, datetime, int]]:
    """GPUs (or instances of ``mig_profile``) the pool's holding reservations, and ``also``
    (windows not saved yet, as (start, end, GPUs)), take over [starts_at, ends_at), as
    consecutive pieces of constant load."""
    overlapping = [
        *_holding(pool, mig_profile, starts_at, ends_at).values_list(
            "starts_at", "ends_at", "gpus"
        ),
        *((start, end, gpus) for start, end, gpus in also if start < ends_at and end > starts_at),
    ]
    changes: dict[datetime, int] = {}
    for start, end, gpus in overlapping:
        changes[max(start, starts_at)] = changes.get(max(start, starts_at), 0) + gpus
        if end < ends_at:
            changes[end] = changes.get(end, 0) - gpus
    bounds = sorted({starts_at, ends_at, *changes})
    pieces, load = [], 0
    for start, end in pairwise(bounds):
        load += changes.get(start, 0)
        pieces.append((start, end, load))
    return pieces


def shortfalls(
    pool: NodePool,
    starts_at: datetime,
    ends_at: datetime,
    gpus: int,
    *,
    capacity: int,
    mig_profile: str = "",
    also: tuple[tuple[datetime, datetime, int], ...] = (),
) -> list[Shortfall]:
    """Where [starts_at, ends_at) lacks ``gpus`` free GPUs (or instances of ``mig_profile``)
    of the pool, beside what its reservations and ``also`` hold, merged by amount."""
    short: list[Shortfall] = []
    for start, end, load in pool_load(pool, starts_at, ends_at, mig_profile, also):
        missing = load + gpus - capacity
        if missing <= 0:
            continue
        if short and short[-1].ends_at == start and short[-1].gpus == missing:
            short[-1] = Shortfall(short[-1].starts_at, end, missing)
        else:
            short.append(Shortfall(start, end, missing))
    return short


def nearest_windows(
    pool: NodePool,
    starts_at: datetime,
    ends_at: datetime,
    gpus: int,
    *,
    capacity: int,
    now,
    mig_profile: str = "",
) -> tuple[datetime | None, datetime | None]:
    """The latest start before ``starts_at`` (not in the past) and the earliest after it at
    which a window of the same length fits in the pool; None where none does within
    ``SEARCH_SPAN`` (nor starting within the booking horizon). A window fits first right after
    a reservation ends or right before one starts, so only those starts are tried."""
    length = ends_at - starts_at
    last_start = booking_horizon(now)
    nearby = _holding(
        pool, mig_profile, starts_at - SEARCH_SPAN, ends_at + SEARCH_SPAN
    ).values_list("starts_at", "ends_at")
    candidates = {edge for start, end in nearby for edge in (end, start - length)}

    def fits(start: datetime) -> bool:
        return not shortfalls(
            pool, start, start + length, gpus, capacity=capacity, mig_profile=mig_profile
        )

    later = sorted(c for c in candidates if starts_at < c <= last_start)
    earlier = sorted((c for c in candidates if now <= c < starts_at), reverse=True)
    return next(filter(fits, earlier), None), next(filter(fits, later), None)
