"""Rating: usage intervals rated piece by piece (an hour, or the part of one under one price
version) into billing records, and reserved capacity hour by hour; use that no price covered
priced after the fact.

A record's key is its interval and the start of its piece (unique in the database), and a
running interval is rated only in whole hours, so a record once written never changes and
rating again writes nothing new. On PostgreSQL a range of intervals rates in one statement
(``rating_sql``), elsewhere in Python here: the same rules (``billing.pricing``'s).
"""

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from itertools import pairwise

from django.db import connection, transaction
from django.db.models import DateTimeField, F, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from portal import clock
from tenants.permissions import Caller, require_operator
from tenants.services import audit_record

from .. import selectors
from ..models import USAGE_UNRATED, BillingRecord, CatalogItem, Invoice, PriceVersion, UsageInterval
from ..pricing import (
    hour_floor,
    hours_between,
    on_demand_items,
    price_in_force,
    reserved_cost,
    reserved_unit_price,
    usage_cost,
    version_in_force,
    versions_applying,
)
from . import credits, drafting, rating_sql
from .metering import (
    BATCH,
    amount_seconds,
    batches,
    over_ranges,
    reservations_charged,
    usage_intervals_sync,
    usage_piece,
)


@dataclass
class PriceBook:
    """The on-demand items and prices of one rating run, each read once."""

    items: dict[int, CatalogItem] = field(default_factory=dict)
    versions: dict[tuple, list[PriceVersion]] = field(default_factory=dict)

    def item(self, item_id: int | None) -> CatalogItem | None:
        if item_id is not None and item_id not in self.items:
            self.items[item_id] = CatalogItem.objects.get(pk=item_id)
        return self.items.get(item_id)

    def in_force(self, item: CatalogItem, organization_id, start: datetime, end: datetime):
        """The (piece start, version) pairs that split [start, end) where a version of the
        price that may apply to the organization starts, each with the version then in force
        (``pricing.version_in_force``)."""
        key = (item.pk, organization_id)
        if key not in self.versions:
            self.versions[key] = list(versions_applying(item.prices.all(), organization_id))
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
    written = over_ranges(
        lambda first, last: rate(first=first, last=last, horizon=horizon),
        UsageInterval.objects.filter(USAGE_UNRATED),
        RATE_CHUNK,
    )
    return written + _reservations_rate(horizon=horizon, now=now)


def _intervals_rate(*, first: int, last: int, horizon: datetime) -> int:
    """``rating_sql.intervals_rate`` in Python: the same rules, interval by interval."""
    intervals = (
        UsageInterval.objects.filter(USAGE_UNRATED, pk__gte=first, pk__lt=last)
        .annotate(
            from_at=Coalesce("rated_until", "started_at"),
            to_at=Coalesce("ended_at", Value(horizon, output_field=DateTimeField())),
        )
        .filter(from_at__lt=F("to_at"))
        # The on-demand item that prices it, as offered when it began.
        .annotate(
            item_id=Subquery(
                on_demand_items(
                    organization=OuterRef("organization"),
                    gpu_class_id=OuterRef("gpu_class"),
                    mig_profile=OuterRef("mig_profile"),
                    tier_id=OuterRef("tier"),
                    at=OuterRef("started_at"),
                ).values("pk")[:1]
            )
        )
        .select_related("organization", "reservation")
        .order_by("pk")
    )
    book = PriceBook()
    written = 0
    for chunk in batches(intervals.iterator(chunk_size=BATCH)):
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
    windows = reservations_charged(
        before=horizon, pieces=BillingRecord.objects.filter(interval__isnull=True)
    ).select_related("organization", "gpu_class")
    written = 0
    for reservation in windows.iterator(chunk_size=BATCH):
        end = reservation.held_until
        until = end if end <= now else min(end, horizon)
        start = reservation.pieces_to or reservation.starts_at
        if until <= start:
            continue
        _, item, value = selectors.reservation_terms(reservation)
        window = reservation.ends_at - reservation.starts_at
        bounds = [start, *hours_between(start, until), until]
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
                quantity_seconds=amount_seconds(reservation.gpus, piece_start, piece_end),
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
    item = book.item(interval.item_id)
    prices = book.in_force(item, interval.organization_id, start, end) if item else [(start, None)]
    hours = [start, *hours_between(start, end), end]
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


def _record(interval, start, end, item, version, *, reserved: bool = False) -> BillingRecord:
    """A piece of the interval, priced by ``version`` (None: unpriced); ``reserved``: inside
    its reservation, whose capacity is charged instead (at no cost here)."""
    unit_price = Decimal(0) if reserved else (version.unit_price if version else None)
    piece, cost = usage_piece(interval, start, end, unit_price)
    return BillingRecord(
        interval=interval,
        charge=BillingRecord.Charge.RESERVED_USE if reserved else BillingRecord.Charge.ON_DEMAND,
        tier_id=interval.tier_id,
        item=item,
        price_version=version,
        cost=cost,
        **piece,
    )


def usage_meter(*, now: datetime | None = None) -> dict[str, int]:
    """The beat's pass: intervals from placements, then their rating, then the preemption
    contract's credits of what is rated."""
    counts = usage_intervals_sync()
    counts["rated"] = usage_rate(now=now)
    counts.update(credits.contract_credits_compute(now=now))
    return counts


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
            item = on_demand_items(
                organization=record.organization,
                gpu_class_id=record.gpu_class_id,
                mig_profile=record.mig_profile,
                tier_id=record.tier_id,
                at=now,
            ).first()
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
