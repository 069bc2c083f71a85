"""Metering: what each placement held while it ran, as usage intervals (``rating`` rates them
into billing records), and the reconciliation of placed with billed seconds.

Nothing is lost or counted twice, whatever dies when: intervals are derived from the placement
rows (scheduling's source of truth, read through its selectors) by a pass that catches up with
all of them, one interval per placement (unique in the database).
"""

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from decimal import Decimal
from itertools import islice

from django.conf import settings
from django.db import connection, transaction
from django.db.models import (
    Case,
    CharField,
    Exists,
    F,
    Func,
    IntegerField,
    Max,
    Min,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
    When,
)
from django.db.models.functions import Coalesce, NullIf

from portal import clock
from portal.db import advisory_lock_key
from scheduling import selectors as scheduling_selectors
from scheduling.models import Placement, Reservation
from tenants.models import Organization

from ..models import BillingRecord, UsageInterval, UsageReconciliation
from ..pricing import hour_floor, usage_cost

BATCH = 2_000
MICROSECOND = Decimal("0.000001")


def batches(items: Iterable, size: int = BATCH) -> Iterator[list]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


class JsonArrayLength(Func):
    """The length of a JSON array column, on either database."""

    function = "json_array_length"
    output_field = IntegerField()

    def as_postgresql(self, compiler, connection, **extra_context):
        return self.as_sql(compiler, connection, function="jsonb_array_length", **extra_context)


# What a placement holds and how much, in SQL: MIG instances, milli-GPU of a share, or whole
# GPUs (the indices it was given, else its workload's count).
PLACEMENT_RESOURCE = Case(
    When(mig_count__gt=0, then=Value(UsageInterval.Resource.MIG)),
    When(workload__gpu_milli__gt=0, then=Value(UsageInterval.Resource.SHARED)),
    default=Value(UsageInterval.Resource.GPUS),
    output_field=CharField(),
)
PLACEMENT_AMOUNT = Case(
    When(mig_count__gt=0, then=F("mig_count")),
    When(workload__gpu_milli__gt=0, then=F("gpu_milli")),
    default=Coalesce(NullIf(JsonArrayLength("gpu_indices"), 0), F("workload__gpus")),
    output_field=IntegerField(),
)

# The interval's columns and the placement's values for them, in one order.
INTERVAL_FROM_PLACEMENT = {
    "placement_id": F("pk"),
    "organization_id": F("workload__project__organization_id"),
    "project_id": F("workload__project_id"),
    "workload_id": F("workload_id"),
    "pool": F("node__pool__name"),
    # The node's: a workload sent back to the queue forgets its class before metering may run.
    "gpu_class_id": F("node__pool__gpu_class_id"),
    "mig_profile": F("mig_profile"),
    "resource": PLACEMENT_RESOURCE,
    "amount": PLACEMENT_AMOUNT,
    "tier_id": F("workload__tier_id"),
    "started_at": F("running_at"),
    "ended_at": F("ended_at"),
}
SYNC_CHUNK = 50_000  # placements per statement and transaction


def usage_intervals_sync() -> dict[str, int]:
    """Open an interval for every placement that ran and has none, and close every open one
    whose placement ended. Counts of each.

    Set-based: one ``INSERT … SELECT`` per range of placements, in a transaction with the
    reservation attribution of what it inserted (a crash loses the whole range, which the next
    pass inserts again; a concurrent pass inserts nothing twice: on PostgreSQL it waits for the
    range's lock, then reads this pass's intervals committed)."""
    opened = over_ranges(
        lambda first, last: _intervals_insert(_placements_unmetered(first, last), first=first),
        _placements_unmetered(),
        SYNC_CHUNK,
    )
    ends = scheduling_selectors.placements_ended().filter(pk=OuterRef("placement_id"))
    closing = UsageInterval.objects.filter(ended_at__isnull=True).filter(
        placement_id__in=scheduling_selectors.placements_ended().values("pk")
    )
    closed = closing.update(ended_at=Subquery(ends.values("ended_at")[:1]))
    return {"opened": opened, "closed": closed}


def _placements_unmetered(first: int | None = None, last: int | None = None) -> QuerySet:
    """Placements that ran and have no interval, of ids [first, last) if given."""
    placements = scheduling_selectors.placements_ran()
    intervals = UsageInterval.objects.filter(placement_id=OuterRef("pk"))
    if first is not None:
        placements = placements.filter(pk__gte=first, pk__lt=last)
        # The range on both sides: the anti-join reads the range's intervals, not all.
        intervals = intervals.filter(placement_id__gte=first, placement_id__lt=last)
    return placements.filter(~Exists(intervals))


def _intervals_insert(placements: QuerySet[Placement], *, first: int) -> int:
    """Insert the intervals of ``placements`` (of the range starting at ``first``) and
    attribute the new ones to reservations; the number inserted."""
    # Aliased: several columns share a placement field's name, which an annotation may not.
    aliased = {f"new_{column}": value for column, value in INTERVAL_FROM_PLACEMENT.items()}
    select = placements.order_by().annotate(**aliased).values(*aliased)
    sql, params = select.query.sql_with_params()
    table = connection.ops.quote_name(UsageInterval._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(column) for column in INTERVAL_FROM_PLACEMENT)
    skip_existing = " ON CONFLICT DO NOTHING"
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # As rating does (``rating_sql``): a concurrent pass waits for the range, then its
            # statement reads this one's intervals committed and skips them, so the insert
            # needs no ON CONFLICT check before each row (a sixth of its database CPU); the
            # one-per-placement key still refuses a second interval, by failing.
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [range_lock_key("sync", first)])
            skip_existing = ""
        cursor.execute(f"INSERT INTO {table} ({columns}) {sql}{skip_existing} RETURNING id", params)
        inserted = {row[0] for row in cursor.fetchall()}
        _attribute_inserted(inserted)
    return len(inserted)


def _attribute_inserted(inserted: set[int]) -> None:
    """Give the inserted intervals that started inside one of their organization's
    reservations the reservation whose capacity covers them, if any."""
    if not inserted:
        return
    candidates = (
        UsageInterval.objects.filter(pk__gte=min(inserted), pk__lte=max(inserted))
        .exclude(resource=UsageInterval.Resource.SHARED)
        .filter(
            Exists(
                Reservation.objects.filter(
                    organization=OuterRef("organization"),
                    state__in=Reservation.BILLED_STATES,
                    starts_at__lte=OuterRef("started_at"),
                    ends_at__gt=OuterRef("started_at"),
                )
            )
        )
        .order_by("started_at", "pk")
    )
    intervals = [interval for interval in candidates if interval.pk in inserted]
    _attribute_reservations(intervals)
    UsageInterval.objects.bulk_update(
        [interval for interval in intervals if interval.reservation_id], ["reservation"]
    )


def _attribute_reservations(intervals: list[UsageInterval]) -> None:
    """Give each new interval the reservation it runs inside: one of its organization's (a
    project's own before the organization's) holding the same resource in its pool at its
    start, whose capacity the intervals already inside it at that moment leave room for. Use
    beyond a reservation's capacity or window is on demand."""
    starts = [i.started_at for i in intervals]
    # One read of the reservations any of the batch could run inside.
    reservations = (
        list(
            Reservation.objects.filter(
                organization__in={i.organization_id for i in intervals},
                state__in=Reservation.BILLED_STATES,
                starts_at__lte=max(starts, default=None),
                ends_at__gt=min(starts, default=None),
            )
            .select_related("pool")
            # Locked: a range inserted at the same time on another connection waits, then
            # counts what this one put inside them.
            .select_for_update(of=("self",))
            .order_by("pk")
        )
        if intervals
        else []
    )
    inside: list[UsageInterval] = []  # of this batch, already given one
    for interval in intervals:
        if interval.resource == UsageInterval.Resource.SHARED:
            continue
        start = interval.started_at
        covering = [
            r
            for r in reservations
            if r.organization_id == interval.organization_id
            and r.project_id in (None, interval.project_id)
            and r.pool.name == interval.pool
            and r.gpu_class_id == interval.gpu_class_id
            and r.mig_profile == interval.mig_profile
            and r.starts_at <= start < r.ends_at
        ]
        for reservation in sorted(covering, key=lambda r: r.project_id is None):
            running_inside = (
                UsageInterval.objects.filter(
                    Q(ended_at__isnull=True) | Q(ended_at__gt=start),
                    reservation=reservation,
                    started_at__lte=start,
                ).aggregate(amount=Sum("amount"))["amount"]
                or 0
            )
            running_inside += sum(
                i.amount
                for i in inside
                if i.reservation_id == reservation.pk and (i.ended_at is None or i.ended_at > start)
            )
            if running_inside + interval.amount <= reservation.held_gpus:
                interval.reservation = reservation
                inside.append(interval)
                break


def reservations_charged(*, before: datetime, pieces: QuerySet) -> QuerySet[Reservation]:
    """The reservations whose window is paid for (approved, active, completed, or cancelled:
    to its cancellation) and began before ``before``, in order, each with ``pieces_to``: the
    end of the last of ``pieces`` (its records or credits) written for it, None for none yet."""
    last = pieces.filter(reservation=OuterRef("pk")).order_by("-ends_at").values("ends_at")[:1]
    return (
        Reservation.objects.filter(
            Q(state__in=Reservation.BILLED_STATES) | Q(state=Reservation.State.CANCELLED),
            starts_at__lt=before,
        )
        .annotate(pieces_to=Subquery(last))
        .order_by("pk")
    )


def range_lock_key(step: str, first: int) -> int:
    """The advisory lock a pass holds while it syncs or rates (``step``) the range of ids
    starting at ``first``."""
    return advisory_lock_key(f"billing.{step}.{first}")


def over_ranges(work: Callable[[int, int], int], rows: QuerySet, size: int) -> int:
    """``work(first, last)`` over the ids of ``rows`` in ranges [first, last) of ``size``,
    each range in a transaction of its own; on PostgreSQL over PORTAL_METER_CONNECTIONS
    connections at once (the ranges hold disjoint rows). The sum of what ``work`` returns.

    Ranges start at multiples of ``size``: two passes at once cut the same ranges, so a lock
    on a range's start serializes them (``range_lock_key``)."""
    bounds = rows.aggregate(first=Min("pk"), last=Max("pk"))
    if bounds["first"] is None:
        return 0
    aligned = bounds["first"] - bounds["first"] % size
    ranges = [(first, first + size) for first in range(aligned, bounds["last"] + 1, size)]
    connections = settings.PORTAL_METER_CONNECTIONS if connection.vendor == "postgresql" else 1
    if connections <= 1 or len(ranges) == 1:
        return sum(_in_transaction(work, first, last) for first, last in ranges)
    with ThreadPoolExecutor(max_workers=connections) as pool:
        return sum(pool.map(lambda bounds: _on_own_connection(work, *bounds), ranges))


def _in_transaction(work: Callable[[int, int], int], first: int, last: int) -> int:
    with transaction.atomic():
        return work(first, last)


def _on_own_connection(work: Callable[[int, int], int], first: int, last: int) -> int:
    """In a thread of the pool: Django gives it a connection of its own, closed here."""
    try:
        return _in_transaction(work, first, last)
    finally:
        connection.close()


def amount_seconds(amount: int, start: datetime, end: datetime) -> Decimal:
    """``amount`` times the seconds from ``start`` to ``end``, exact to the microsecond."""
    microseconds = (end - start) // timedelta(microseconds=1)
    return (amount * Decimal(microseconds) / 10**6).quantize(MICROSECOND)


def usage_piece(
    interval: UsageInterval, start: datetime, end: datetime, unit_price: Decimal | None
) -> tuple[dict, Decimal]:
    """What a billing record and a lost-work credit of ``interval``'s use over [start, end) at
    ``unit_price`` (None: unpriced, at no cost) both say: whose use, of what, how much and at
    what price, as fields; and its cost."""
    quantity = amount_seconds(interval.amount, start, end)
    fields = {
        "organization_id": interval.organization_id,
        "project_id": interval.project_id,
        "gpu_class_id": interval.gpu_class_id,
        "mig_profile": interval.mig_profile,
        "resource": interval.resource,
        "starts_at": start,
        "ends_at": end,
        "quantity_seconds": quantity,
        "unit_price": unit_price,
    }
    cost = Decimal(0) if unit_price is None else usage_cost(unit_price, quantity, interval.resource)
    return fields, cost


def usage_reconcile(
    *, starts_at: datetime, ends_at: datetime, now: datetime | None = None
) -> UsageReconciliation:
    """Compare, per organization and resource, the seconds the placement rows held over
    [starts_at, ends_at) (whole hours) with the seconds billed there, both up to the last
    whole hour before ``now`` (rating goes no further for running ones; what ended since is
    compared once that hour is whole), and record the result: every difference is listed."""
    if starts_at != hour_floor(starts_at) or ends_at != hour_floor(ends_at):
        raise ValueError("A reconciliation period starts and ends on whole hours.")
    horizon = min(hour_floor(now or clock.now()), ends_at)
    placed: dict[tuple[str, str], Decimal] = {}
    held = scheduling_selectors.placements_ran().filter(
        Q(ended_at__isnull=True) | Q(ended_at__gt=starts_at), running_at__lt=horizon
    )
    held = held.annotate(resource=PLACEMENT_RESOURCE, amount=PLACEMENT_AMOUNT).values_list(
        "workload__project__organization_id", "resource", "amount", "running_at", "ended_at"
    )
    for organization, resource, amount, running_at, ended_at in held.iterator(chunk_size=BATCH):
        start = max(running_at, starts_at)
        end = min(ended_at or horizon, horizon)
        if end > start:
            key = (organization, resource)
            placed[key] = placed.get(key, Decimal(0)) + amount_seconds(amount, start, end)
    billed = {
        (row["organization_id"], row["resource"]): row["seconds"].quantize(MICROSECOND)
        for row in BillingRecord.objects.filter(
            interval__isnull=False, starts_at__gte=starts_at, starts_at__lt=horizon
        )
        .values("organization_id", "resource")
        .annotate(seconds=Sum("quantity_seconds"))
    }
    slugs = dict(
        Organization.objects.filter(
            pk__in={o for o, _ in placed.keys() | billed.keys()}
        ).values_list("pk", "slug")
    )
    differences = [
        {
            "organization": slugs[organization],
            "resource": resource,
            "placed_seconds": str(placed.get((organization, resource), 0)),
            "billed_seconds": str(billed.get((organization, resource), 0)),
        }
        for organization, resource in sorted(placed.keys() | billed.keys())
        if placed.get((organization, resource), 0) != billed.get((organization, resource), 0)
    ]
    return UsageReconciliation.objects.create(
        starts_at=starts_at,
        ends_at=ends_at,
        organizations=len({organization for organization, _ in placed.keys() | billed.keys()}),
        placed_seconds=sum(placed.values(), Decimal(0)),
        billed_seconds=sum(billed.values(), Decimal(0)),
        differences=differences,
    )
