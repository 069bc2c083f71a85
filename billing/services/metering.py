"""Metering: what each placement held while it ran, as usage intervals, rated piece by piece
(an hour, or the part of one under one price version) into billing records.

Nothing is lost or counted twice, whatever dies when: intervals are derived from the placement
rows (scheduling's source of truth, read through its selectors) by a pass that catches up with
all of them, one interval per placement (unique in the database); a record's key is its
interval and the start of its piece (unique too), and a running interval is rated only in
whole hours, so a record once written never changes and rating again writes nothing new.
"""

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from itertools import islice, pairwise

from django.conf import settings
from django.db import connection, transaction
from django.db.models import (
    Case,
    CharField,
    DateTimeField,
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
from scheduling import selectors as scheduling_selectors
from scheduling.models import Placement, Reservation
from tenants.models import Organization
from tenants.permissions import Caller, require_operator
from tenants.services import audit_record

from .. import selectors
from ..models import (
    USAGE_UNRATED,
    BillingRecord,
    CatalogItem,
    Invoice,
    PriceVersion,
    UsageInterval,
    UsageReconciliation,
)
from ..pricing import (
    hour_floor,
    on_demand_item,
    price_in_force,
    reserved_cost,
    reserved_unit_price,
    usage_cost,
    version_in_force,
)
from . import drafting, rating_sql

BATCH = 2_000
HOUR = timedelta(hours=1)
MICROSECOND = Decimal("0.000001")


def _batches(items: Iterable, size: int = BATCH) -> Iterator[list]:
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
    "gpu_class_id": F("workload__gpu_class_id"),
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
    pass inserts again; a concurrent pass inserts nothing twice)."""
    opened = _over_ranges(
        lambda first, last: _intervals_insert(_placements_unmetered(first, last)),
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


def _intervals_insert(placements: QuerySet[Placement]) -> int:
    """Insert the intervals of ``placements`` and attribute the new ones to reservations; the
    number inserted."""
    # Aliased: several columns share a placement field's name, which an annotation may not.
    aliased = {f"new_{column}": value for column, value in INTERVAL_FROM_PLACEMENT.items()}
    select = placements.order_by().annotate(**aliased).values(*aliased)
    sql, params = select.query.sql_with_params()
    table = connection.ops.quote_name(UsageInterval._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(column) for column in INTERVAL_FROM_PLACEMENT)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} ({columns}) {sql} ON CONFLICT DO NOTHING RETURNING id", params
        )
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


@dataclass
class PriceBook:
    """The on-demand prices of one rating run, looked up once per (organization, class,
    profile, tier) and item."""

    items: dict[tuple, CatalogItem | None] = field(default_factory=dict)
    versions: dict[tuple, list[PriceVersion]] = field(default_factory=dict)

    def item(self, interval: UsageInterval) -> CatalogItem | None:
        """The on-demand item that prices the interval (``pricing.on_demand_item``), as
        offered when it began."""
        key = (
            interval.organization_id,
            interval.gpu_class_id,
            interval.mig_profile,
            interval.tier_id,
        )
        if key not in self.items:
            self.items[key] = on_demand_item(
                organization=interval.organization,
                gpu_class_id=interval.gpu_class_id,
                mig_profile=interval.mig_profile,
                tier_id=interval.tier_id,
                at=interval.started_at,
            )
        return self.items[key]

    def in_force(self, item: CatalogItem, organization_id, start: datetime, end: datetime):
        """The (piece start, version) pairs that split [start, end) where a version of the
        price that may apply to the organization starts, each with the version then in force
        (``pricing.version_in_force``)."""
        key = (item.pk, organization_id)
        if key not in self.versions:
            self.versions[key] = list(
                item.prices.filter(Q(organization__isnull=True) | Q(organization=organization_id))
            )
        versions = self.versions[key]
        changes = sorted({v.effective_from for v in versions if start < v.effective_from < end})
        return [
            (moment, version_in_force(versions, organization_id, moment))
            for moment in [start, *changes]
        ]


RATE_CHUNK = 100_000  # interval ids per rating statement and transaction


def usage_rate(*, now: datetime | None = None) -> int:
    """Rate what is left to rate of every interval: a closed one to its end, a running one to
    the last whole hour. The number of records written.

    By ranges of interval ids, a transaction each: on PostgreSQL in one statement a range
    (``rating_sql``), elsewhere (SQLite, the demo's) interval by interval in Python."""
    now = now or clock.now()
    horizon = hour_floor(now)
    rate = rating_sql.intervals_rate if connection.vendor == "postgresql" else _intervals_rate
    written = _over_ranges(
        lambda first, last: rate(first=first, last=last, horizon=horizon),
        UsageInterval.objects.filter(USAGE_UNRATED),
        RATE_CHUNK,
    )
    return written + _reservations_rate(horizon=horizon, now=now)


def _over_ranges(work: Callable[[int, int], int], rows: QuerySet, size: int) -> int:
    """``work(first, last)`` over the ids of ``rows`` in ranges [first, last) of ``size``,
    each range in a transaction of its own; on PostgreSQL over PORTAL_METER_CONNECTIONS
    connections at once (the ranges hold disjoint rows). The sum of what ``work`` returns."""
    bounds = rows.aggregate(first=Min("pk"), last=Max("pk"))
    if bounds["first"] is None:
        return 0
    ranges = [(first, first + size) for first in range(bounds["first"], bounds["last"] + 1, size)]
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


def _intervals_rate(*, first: int, last: int, horizon: datetime) -> int:
    """``rating_sql.intervals_rate`` in Python: the same rules, interval by interval."""
    intervals = (
        UsageInterval.objects.filter(USAGE_UNRATED, pk__gte=first, pk__lt=last)
        .annotate(
            from_at=Coalesce("rated_until", "started_at"),
            to_at=Coalesce("ended_at", Value(horizon, output_field=DateTimeField())),
        )
        .filter(from_at__lt=F("to_at"))
        .select_related("organization", "reservation")
        .order_by("pk")
    )
    book = PriceBook()
    written = 0
    for chunk in _batches(intervals.iterator(chunk_size=BATCH)):
        records = [record for interval in chunk for record in _pieces(interval, book=book)]
        written += len(BillingRecord.objects.bulk_create(records, ignore_conflicts=True))
        for interval in chunk:
            interval.rated_until = interval.to_at
        UsageInterval.objects.bulk_update(chunk, ["rated_until"])
    return written


def _reservations_rate(*, horizon: datetime, now: datetime) -> int:
    """Charge reserved capacity hour by hour for the whole window at the reservation's price
    (its order's total, or its item's price when asked for), spread evenly over the window:
    an open window to the last whole hour, a finished one to its end, a cancelled one to its
    cancellation (what is left is the cancellation charge's)."""
    rated_to = (
        BillingRecord.objects.filter(reservation=OuterRef("pk"), interval__isnull=True)
        .order_by("-ends_at")
        .values("ends_at")[:1]
    )
    windows = (
        Reservation.objects.filter(
            Q(state__in=Reservation.BILLED_STATES) | Q(state=Reservation.State.CANCELLED),
            starts_at__lt=horizon,
        )
        .annotate(rated_to=Subquery(rated_to))
        .select_related("organization", "gpu_class")
        .order_by("pk")
    )
    written = 0
    for reservation in windows.iterator(chunk_size=BATCH):
        end = reservation.held_until
        until = end if end <= now else min(end, horizon)
        start = reservation.rated_to or reservation.starts_at
        if until <= start:
            continue
        _, item, value = selectors.reservation_terms(reservation)
        window = reservation.ends_at - reservation.starts_at
        bounds = [start, *_hours_between(start, until), until]
        records = [
            BillingRecord(
                reservation=reservation,
                organization_id=reservation.organization_id,
                project_id=reservation.project_id,
                gpu_class_id=reservation.gpu_class_id,
                mig_profile=reservation.mig_profile,
                resource=UsageInterval.Resource.MIG
                if reservation.mig_profile
                else UsageInterval.Resource.GPUS,
                charge=BillingRecord.Charge.RESERVATION,
                starts_at=piece_start,
                ends_at=piece_end,
                quantity_seconds=_quantity_seconds(reservation.gpus, piece_start, piece_end),
                # None: no item priced it, which operators are told of (``usage_unpriced``).
                unit_price=None
                if item is None
                else reserved_unit_price(value, reservation.gpus, window),
                cost=reserved_cost(value, piece_end - piece_start, window),
            )
            for piece_start, piece_end in pairwise(bounds)
        ]
        with transaction.atomic():
            written += len(BillingRecord.objects.bulk_create(records, ignore_conflicts=True))
    return written


def _pieces(interval: UsageInterval, *, book: PriceBook) -> list[BillingRecord]:
    """The records of the interval's unrated part (``from_at`` to ``to_at``), split at every
    hour, price change and edge of its reservation's window."""
    start, end = interval.from_at, interval.to_at
    item = book.item(interval)
    prices = book.in_force(item, interval.organization_id, start, end) if item else [(start, None)]
    hours = [start, *_hours_between(start, end), end]
    window = interval.reservation
    window_end = window.held_until if window else None
    edges = [t for t in (window.starts_at, window_end) if start < t < end] if window else []
    bounds = sorted({*hours, *(moment for moment, _ in prices), *edges})
    records = []
    for piece_start, piece_end in pairwise(bounds):
        if window and window.starts_at <= piece_start < window_end:
            records.append(_record(interval, piece_start, piece_end, None, None, reserved=True))
            continue
        version = next(v for moment, v in reversed(prices) if moment <= piece_start)
        records.append(_record(interval, piece_start, piece_end, item, version))
    return records


def _hours_between(start: datetime, end: datetime) -> list[datetime]:
    hour = hour_floor(start) + HOUR
    hours = []
    while hour < end:
        hours.append(hour)
        hour += HOUR
    return hours


def _quantity_seconds(amount: int, start: datetime, end: datetime) -> Decimal:
    """``amount`` times the seconds from ``start`` to ``end``, exact to the microsecond."""
    microseconds = (end - start) // timedelta(microseconds=1)
    return (amount * Decimal(microseconds) / 10**6).quantize(MICROSECOND)


def _record(interval, start, end, item, version, *, reserved: bool = False) -> BillingRecord:
    """A piece of the interval, priced by ``version`` (None: unpriced); ``reserved``: inside
    its reservation, whose capacity is charged instead (at no cost here)."""
    quantity_seconds = _quantity_seconds(interval.amount, start, end)
    unit_price = Decimal(0) if reserved else (version.unit_price if version else None)
    cost = Decimal(0)
    if unit_price is not None:
        cost = usage_cost(unit_price, quantity_seconds, interval.resource)
    return BillingRecord(
        interval=interval,
        charge=BillingRecord.Charge.RESERVED_USE if reserved else BillingRecord.Charge.ON_DEMAND,
        organization_id=interval.organization_id,
        project_id=interval.project_id,
        gpu_class_id=interval.gpu_class_id,
        mig_profile=interval.mig_profile,
        resource=interval.resource,
        tier_id=interval.tier_id,
        starts_at=start,
        ends_at=end,
        quantity_seconds=quantity_seconds,
        item=item,
        price_version=version,
        unit_price=unit_price,
        cost=cost,
    )


def usage_meter(*, now: datetime | None = None) -> dict[str, int]:
    """The beat's pass: intervals from placements, then their rating."""
    counts = usage_intervals_sync()
    counts["rated"] = usage_rate(now=now)
    return counts


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
            placed[key] = placed.get(key, Decimal(0)) + _quantity_seconds(amount, start, end)
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


def usage_unpriced_price(*, caller: Caller, records: QuerySet[BillingRecord] | None = None) -> int:
    """Finance prices use that was rated with no price in force (of ``records`` if given):
    each on-demand record at the price now in force for the organization of the on-demand
    item now offered to it for its class, profile and tier, each reserved hour at the
    reservation item's; then the drafts of the months concerned are made again. Records of a
    month already invoiced (issued or paid) stay as they are. The number priced."""
    require_operator(caller)
    now = clock.now()
    records = BillingRecord.objects.all() if records is None else records
    unpriced = (
        records.filter(unit_price__isnull=True)
        .select_related("organization", "reservation", "reservation__organization")
        .order_by("pk")
    )
    invoiced = list(
        Invoice.objects.filter(
            corrects__isnull=True, state__in=[Invoice.State.ISSUED, Invoice.State.PAID]
        ).values_list("organization_id", "period_start", "period_end")
    )
    priced: list[BillingRecord] = []
    months: set[tuple] = set()
    for record in unpriced:
        if any(
            o == record.organization_id and start <= record.starts_at < end
            for o, start, end in invoiced
        ):
            continue
        if record.charge == BillingRecord.Charge.RESERVATION:
            _, item, value = selectors.reservation_terms(record.reservation, at=now)
            if item is None:
                continue
            reservation = record.reservation
            window = reservation.ends_at - reservation.starts_at
            record.item = item
            record.unit_price = reserved_unit_price(value, reservation.gpus, window)
            record.cost = reserved_cost(value, record.ends_at - record.starts_at, window)
        else:
            item = on_demand_item(
                organization=record.organization,
                gpu_class_id=record.gpu_class_id,
                mig_profile=record.mig_profile,
                tier_id=record.tier_id,
                at=now,
            )
            version = item and price_in_force(item=item, at=now, organization=record.organization)
            if version is None:
                continue
            record.item, record.price_version = item, version
            record.unit_price = version.unit_price
            record.cost = usage_cost(version.unit_price, record.quantity_seconds, record.resource)
        priced.append(record)
        local = record.starts_at.astimezone(record.organization.zone)
        months.add((record.organization, local.year, local.month))
    with transaction.atomic():
        BillingRecord.objects.bulk_update(
            priced, ["item", "price_version", "unit_price", "cost"], batch_size=BATCH
        )
        for organization in {organization for organization, _, _ in months}:
            audit_record(
                caller=caller,
                organization=organization,
                action="usage.price",
                target=organization,
                payload={
                    "records": sum(1 for r in priced if r.organization_id == organization.pk),
                    "cost": str(
                        sum(
                            (r.cost for r in priced if r.organization_id == organization.pk),
                            Decimal(0),
                        )
                    ),
                },
            )
    for organization, year, month in sorted(months, key=lambda m: (m[0].slug, m[1], m[2])):
        drafting.invoice_draft(organization=organization, year=year, month=month)
    return len(priced)
