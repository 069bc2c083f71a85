"""Capacity ahead, as a tenant sees it: per GPU pool, the whole GPUs free, reserved and expected
busy in each hour of the next days, and the earliest windows where a block of N GPUs on one
node or one rack is free throughout (what the reservation form proposes).

Every GPU pool is open to every organization (no pool is dedicated to some), so each tenant
sees them all; other tenants' reservations and work show only as counts. A fixed number of
queries however large the cluster: the nodes, the placements holding GPUs, their workloads
(with projects, classes and tiers), the reservations holding capacity."""

from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo

from django.core.exceptions import ValidationError

from tenants.models import Organization
from tenants.permissions import Action, Caller, authorize

from ..engine import calendar as engine_calendar
from ..models import GpuClass, Node, Placement, PriorityTier, Reservation, Workload
from ..specs_from_models import engine_nodes, engine_reservations, engine_running, workload_rows

CALENDAR_HOURS = 14 * 24
# The topology level a rack is (``NodePool.topology_keys``), and the levels a block may ask.
RACK = "rack"
LEVELS = (engine_calendar.NODE, RACK)
# How many windows a block search proposes.
WINDOWS_PROPOSED = 3


@dataclass(frozen=True)
class BlockAsk:
    """A block to find: ``gpus`` whole GPUs on one node (or rack) for ``hours`` hours."""

    gpus: int
    level: str = engine_calendar.NODE
    hours: int = 1


@dataclass(frozen=True)
class ProposedWindow:
    window: engine_calendar.BlockWindow
    sentence: str


@dataclass(frozen=True)
class CapacityCalendar:
    start: datetime
    hours: int
    pools: list[engine_calendar.PoolCalendar]
    block: BlockAsk | None
    windows: list[ProposedWindow]


def capacity_ahead(
    *,
    caller: Caller,
    organization: Organization,
    now: datetime,
    start: datetime | None = None,
    hours: int = CALENDAR_HOURS,
    pool: str | None = None,
    gpu_class: str | None = None,
    block: BlockAsk | None = None,
) -> CapacityCalendar:
    """The calendar of the GPU pools (of ``pool``, or of ``gpu_class``, if given) over
    ``hours`` hours from ``start`` (now by default), taken from the next full hour: a window
    proposed from it never starts in the past. Field errors for names that are no pool or
    class, a start in the past or beyond the calendar's reach, a block of no GPUs."""
    authorize(caller=caller, organization=organization, action=Action.RESERVATION_VIEW)
    begins = _next_hour(max(start or now, now))
    errors = _errors(now=now, start=start, block=block, hours=hours)
    if errors:
        raise ValidationError(errors)
    nodes = Node.objects.filter(cordoned=False, pool__gpu_class__isnull=False)
    if pool:
        nodes = nodes.filter(pool__name=pool)
    if gpu_class:
        nodes = nodes.filter(pool__gpu_class__name=gpu_class)
    nodes = list(nodes.select_related("pool__gpu_class", "pool__cluster"))
    if not nodes and (pool or gpu_class):
        field, name = ("pool", pool) if pool else ("gpu_class", gpu_class)
        raise ValidationError({field: [f"No GPU pool {'named' if pool else 'of'} {name!r}."]})
    # Rows, not model instances, for the work: a few thousand placements load in a fraction
    # of the time (as the scheduling cycle loads them).
    by_id = {node.pk: node for node in nodes}
    placements = list(
        Placement.objects.filter(ended_at__isnull=True, node__in=nodes)
        .order_by()
        .only(
            "workload_id",
            "node_id",
            "gpu_indices",
            "gpu_milli",
            "mig_profile",
            "mig_count",
            "cpu_milli",
            "memory_mib",
        )
    )
    by_workload: dict = {}
    for placement in placements:
        placement.node = by_id[placement.node_id]
        by_workload.setdefault(placement.workload_id, []).append(placement)
    running = workload_rows(
        Workload.objects.filter(pk__in=by_workload).order_by(),
        classes=GpuClass.objects.in_bulk(),
        tiers=PriorityTier.objects.in_bulk(),
    )
    reservations = Reservation.objects.filter(
        state__in=Reservation.HOLDING_STATES,
        mig_profile="",
        starts_at__lt=begins + hours * engine_calendar.HOUR,
        ends_at__gt=begins,
        pool__in={node.pool for node in nodes},
    ).select_related("organization", "project", "gpu_class", "pool")
    pools = engine_calendar.capacity_calendar(
        nodes=engine_nodes(nodes, placements),
        running=[engine_running(w, by_workload[w.pk], tolerations=()) for w in running],
        # As booked: what a reservation request is checked against, so that a proposed
        # window is one the request would get.
        reservations=engine_reservations(reservations, as_booked=True),
        start=begins,
        hours=hours,
        levels=(RACK,),
    )
    windows = [] if block is None else block_windows(pools, block, zone=organization.zone, now=now)
    return CapacityCalendar(begins, hours, pools, block, windows)


def block_windows(
    pools: list[engine_calendar.PoolCalendar],
    block: BlockAsk,
    *,
    zone: tzinfo,
    now: datetime,
    gpu_class: str | None = None,
    pool: str | None = None,
) -> list[ProposedWindow]:
    """The earliest windows of ``pools`` (those of ``gpu_class`` and ``pool``, if given)
    where ``block`` fits, each with its sentence in ``zone``."""
    found = engine_calendar.earliest_windows(
        [p for p in pools if gpu_class in (None, p.gpu_class) and pool in (None, p.pool)],
        gpus=block.gpus,
        level=block.level,
        length=block.hours,
        count=WINDOWS_PROPOSED,
    )
    return [ProposedWindow(w, window_sentence(w, block, zone=zone, now=now)) for w in found]


def window_sentence(
    window: engine_calendar.BlockWindow, block: BlockAsk, *, zone: tzinfo, now: datetime
) -> str:
    """ "8 H100-80GB on one node: from Thursday 10:00" in ``zone``; the date too when the day
    is a week or more ahead (the weekday alone would name an earlier one)."""
    local = window.starts_at.astimezone(zone)
    day = "%A %-d %b" if local.date() - now.astimezone(zone).date() >= timedelta(days=7) else "%A"
    where = "one node" if block.level == engine_calendar.NODE else f"one {block.level}"
    return (
        f"{block.gpus} {window.gpu_class} on {where} in {window.pool}:"
        f" from {local.strftime(day)} {local:%H:%M}"
    )


def _next_hour(instant: datetime) -> datetime:
    hour = instant.replace(minute=0, second=0, microsecond=0)
    return hour if hour == instant else hour + engine_calendar.HOUR


def _errors(
    *, now: datetime, start: datetime | None, block: BlockAsk | None, hours: int
) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    reach = timedelta(hours=CALENDAR_HOURS)
    if start is not None and start < now - engine_calendar.HOUR:
        errors["from"] = ["The calendar starts now or later."]
    elif start is not None and start > now + reach:
        errors["from"] = [f"The calendar reaches {CALENDAR_HOURS // 24} days ahead at most."]
    if not 1 <= hours <= CALENDAR_HOURS:
        errors["hours"] = [f"Between 1 and {CALENDAR_HOURS} hours."]
    if block is not None:
        if block.gpus < 1:
            errors["gpus"] = ["A block of at least one GPU."]
        if block.level not in LEVELS:
            errors["level"] = [f"One of: {', '.join(LEVELS)}."]
        if not 1 <= block.hours <= hours:
            errors["length"] = ["A window of at least one hour, within the calendar's hours."]
    return errors
