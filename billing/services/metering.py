"""Metering: what each placement held while it ran, as usage intervals, rated piece by piece
(an hour, or the part of one under one price version) into billing records.

Nothing is lost or counted twice, whatever dies when: intervals are derived from the placement
rows (scheduling's source of truth, read through its selectors) by a pass that catches up with
all of them, one interval per placement (unique in the database); a record's key is its
interval and the start of its piece (unique too), and a running interval is rated only in
whole hours, so a record once written never changes and rating again writes nothing new.
"""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from itertools import islice, pairwise

from django.db import transaction
from django.db.models import F, OuterRef, Q, Subquery, Sum

from scheduling import clock
from scheduling import selectors as scheduling_selectors
from scheduling.models import Placement
from tenants.models import Organization

from .. import selectors
from ..models import BillingRecord, CatalogItem, PriceVersion, UsageInterval, UsageReconciliation
from ..pricing import billed_hours

BATCH = 2_000
HOUR = timedelta(hours=1)
MICROSECOND = Decimal("0.000001")


def _batches(items: Iterable, size: int = BATCH) -> Iterator[list]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def usage_resource(placement: Placement) -> tuple[str, int]:
    """The resource a placement holds and how much: MIG instances, milli-GPU of a share, or
    whole GPUs."""
    if placement.mig_count:
        return UsageInterval.Resource.MIG, placement.mig_count
    if placement.workload.gpu_milli:
        return UsageInterval.Resource.SHARED, placement.gpu_milli
    return UsageInterval.Resource.GPUS, len(placement.gpu_indices) or placement.workload.gpus


def usage_intervals_sync() -> dict[str, int]:
    """Open an interval for every placement that ran and has none, and close every open one
    whose placement ended. Counts of each."""
    missing = scheduling_selectors.placements_ran().exclude(
        pk__in=UsageInterval.objects.values("placement_id")
    )
    opened = 0
    for chunk in _batches(missing.iterator(chunk_size=BATCH)):
        made = UsageInterval.objects.bulk_create(
            [_interval(placement) for placement in chunk], ignore_conflicts=True
        )
        opened += len(made)
    ends = scheduling_selectors.placements_ended().filter(pk=OuterRef("placement_id"))
    closing = UsageInterval.objects.filter(ended_at__isnull=True).filter(
        placement_id__in=scheduling_selectors.placements_ended().values("pk")
    )
    closed = closing.update(ended_at=Subquery(ends.values("ended_at")[:1]))
    return {"opened": opened, "closed": closed}


def _interval(placement: Placement) -> UsageInterval:
    workload = placement.workload
    resource, amount = usage_resource(placement)
    return UsageInterval(
        placement=placement,
        organization_id=workload.project.organization_id,
        project_id=workload.project_id,
        workload=workload,
        pool=placement.node.pool.name,
        gpu_class_id=workload.gpu_class_id,
        mig_profile=placement.mig_profile,
        resource=resource,
        amount=amount,
        tier_id=workload.tier_id,
        started_at=placement.running_at,
        ended_at=placement.ended_at,
    )


def hour_floor(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


@dataclass
class PriceBook:
    """The on-demand prices of one rating run, looked up once per (organization, class,
    profile, tier) and item."""

    items: dict[tuple, CatalogItem | None] = field(default_factory=dict)
    versions: dict[tuple, list[PriceVersion]] = field(default_factory=dict)

    def item(self, interval: UsageInterval) -> CatalogItem | None:
        """The organization's on-demand item for the interval's class, profile and tier (one
        for its tier before one for every tier), as offered when the interval began."""
        key = (
            interval.organization_id,
            interval.gpu_class_id,
            interval.mig_profile,
            interval.tier_id,
        )
        if key not in self.items:
            offered = selectors.offered_to(
                organization=interval.organization, at=interval.started_at
            ).filter(
                kind=CatalogItem.Kind.ON_DEMAND,
                gpu_class=interval.gpu_class_id,
                mig_profile=interval.mig_profile,
            )
            self.items[key] = (
                offered.filter(tier=interval.tier_id).order_by("slug").first()
                or offered.filter(tier__isnull=True).order_by("slug").first()
            )
        return self.items[key]

    def in_force(self, item: CatalogItem, organization_id, start: datetime, end: datetime):
        """The (piece start, version) pairs that split [start, end) where the price in force
        for the organization changes (its own versions over the list's)."""
        key = (item.pk, organization_id)
        if key not in self.versions:
            self.versions[key] = list(
                item.prices.filter(
                    Q(organization__isnull=True) | Q(organization=organization_id)
                ).order_by("effective_from")
            )
        versions = self.versions[key]
        changes = sorted({v.effective_from for v in versions if start < v.effective_from < end})
        return [
            (moment, _version_at(versions, organization_id, moment)) for moment in [start, *changes]
        ]


def _version_at(versions: list[PriceVersion], organization_id, at: datetime) -> PriceVersion | None:
    """As ``selectors.price_in_force``, over versions already read."""
    started = [v for v in versions if v.effective_from <= at]
    own = [v for v in started if v.organization_id == organization_id]
    listed = [v for v in started if v.organization_id is None]
    return (own or listed or [None])[-1]


def usage_rate(*, now: datetime | None = None) -> int:
    """Rate what is left to rate of every interval: a closed one to its end, a running one to
    the last whole hour. The number of records written."""
    horizon = hour_floor(now or clock.now())
    rated_to = (
        BillingRecord.objects.filter(interval=OuterRef("pk"))
        .order_by("-ends_at")
        .values("ends_at")[:1]
    )
    closed = (
        UsageInterval.objects.annotate(rated_to=Subquery(rated_to))
        .filter(ended_at__isnull=False, ended_at__gt=F("started_at"))
        .filter(Q(rated_to__isnull=True) | Q(rated_to__lt=F("ended_at")))
    )
    running = (
        UsageInterval.objects.annotate(rated_to=Subquery(rated_to))
        .filter(ended_at__isnull=True, started_at__lt=horizon)
        .filter(Q(rated_to__isnull=True) | Q(rated_to__lt=horizon))
    )
    book = PriceBook()
    written = 0
    for queryset in (closed, running):
        intervals = queryset.select_related("organization").order_by("pk")
        for chunk in _batches(intervals.iterator(chunk_size=BATCH)):
            records = [
                record
                for interval in chunk
                for record in _pieces(interval, horizon=horizon, book=book)
            ]
            with transaction.atomic():
                written += len(BillingRecord.objects.bulk_create(records, ignore_conflicts=True))
    return written


def _pieces(interval: UsageInterval, *, horizon: datetime, book: PriceBook) -> list[BillingRecord]:
    """The records of the interval's unrated part, split at every hour and price change."""
    start = interval.rated_to or interval.started_at
    end = interval.ended_at or horizon
    item = book.item(interval)
    prices = book.in_force(item, interval.organization_id, start, end) if item else [(start, None)]
    hours = [start, *_hours_between(start, end), end]
    bounds = sorted({*hours, *(moment for moment, _ in prices)})
    records = []
    for piece_start, piece_end in pairwise(bounds):
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


def _record(interval, start, end, item, version) -> BillingRecord:
    quantity_seconds = _quantity_seconds(interval.amount, start, end)
    unit_price = version.unit_price if version else None
    cost = Decimal(0)
    if unit_price is not None:
        cost = unit_price * billed_hours(quantity_seconds, interval.resource)
    return BillingRecord(
        interval=interval,
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
    [starts_at, ends_at) (whole hours; running ones to the last whole hour, as rating goes)
    with the seconds billed there, and record the result: every difference is listed."""
    if starts_at != hour_floor(starts_at) or ends_at != hour_floor(ends_at):
        raise ValueError("A reconciliation period starts and ends on whole hours.")
    horizon = min(hour_floor(now or clock.now()), ends_at)
    placed: dict[tuple[str, str], Decimal] = {}
    held = scheduling_selectors.placements_ran().filter(
        Q(ended_at__isnull=True) | Q(ended_at__gt=starts_at), running_at__lt=horizon
    )
    for placement in held.iterator(chunk_size=BATCH):
        start = max(placement.running_at, starts_at)
        end = min(placement.ended_at or horizon, horizon)
        if end > start:
            resource, amount = usage_resource(placement)
            key = (placement.workload.project.organization_id, str(resource))
            placed[key] = placed.get(key, Decimal(0)) + _quantity_seconds(amount, start, end)
    billed = {
        (row["organization_id"], row["resource"]): row["seconds"].quantize(MICROSECOND)
        for row in BillingRecord.objects.filter(starts_at__gte=starts_at, ends_at__lte=ends_at)
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
