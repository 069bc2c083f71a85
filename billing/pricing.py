"""Prices, each rule written once: which catalog items are offered and which on-demand or
reservation item applies; which version of an item's price is in force (and which comes next);
what a unit price multiplies; what reserved capacity costs; and the one rounding rule: half up
to cents, once per amount, and for rated use once per invoice line (its records' costs, kept to
10 places, summed first); every figure of money the portal shows adds amounts rounded so
(``selectors.charged``), so the usage API and the invoices agree to the cent.

Which item applies is a query, which the rating in Python runs as a subquery of the intervals'
and ``services/rating_sql`` compiles into its statement. Which version is in force (and next)
is written twice, side by side: in Python over versions already read (the rating in Python, a
run's versions read once) and as a query (the selectors, the catalog's subqueries, compiled
into the rating statement); ``tests/billing/test_pricing_properties.py`` holds the two to
the same answers on random price histories, on SQLite and PostgreSQL."""

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta, tzinfo
from decimal import ROUND_HALF_UP, Decimal, localcontext

from django.db.models import Exists, F, OuterRef, Q, QuerySet

from portal.money import to_cents
from tenants.models import Organization

from .models import CatalogItem, PriceVersion

SECONDS_PER_HOUR = 3600
MONTH = timedelta(days=30)
# A billing record keeps its cost to 10 places; invoices round lines to cents.
RECORD_PLACES = Decimal("1E-10")
MILLI_PER_GPU = Decimal(1000)


def hour_floor(moment: datetime) -> datetime:
    """The whole UTC hour ``moment`` falls in: records are rated by UTC hours."""
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def hours_between(start: datetime, end: datetime) -> list[datetime]:
    """The whole UTC hours strictly inside (``start``, ``end``): where a piece is cut."""
    hour = hour_floor(start) + timedelta(hours=1)
    hours = []
    while hour < end:
        hours.append(hour)
        hour += timedelta(hours=1)
    return hours


def month_of(moment: datetime, zone: tzinfo = UTC) -> tuple[datetime, datetime]:
    """The month ``moment`` falls in, in ``zone`` (an organization's), as [start, end) in
    UTC. Records are rated by UTC hours, so a zone whose offset is not whole hours (India's
    +05:30) has its months begin on the UTC hour before its midnight."""
    local = moment.astimezone(zone)
    start = datetime(local.year, local.month, 1, tzinfo=zone)
    end = datetime(local.year + local.month // 12, local.month % 12 + 1, 1, tzinfo=zone)
    return hour_floor(start), hour_floor(end)


def month_bounds(year: int, month: int, zone: tzinfo = UTC) -> tuple[datetime, datetime]:
    """Month ``month`` of ``year`` in ``zone``, as ``month_of`` bounds it."""
    return month_of(datetime(year, month, 15, tzinfo=zone), zone)


def period_units(item: CatalogItem, starts_at: datetime, ends_at: datetime) -> Decimal:
    """What the unit price multiplies: hours for GPU-hour items, months (30 days, started
    months counted whole) for monthly ones."""
    if item.kind in (CatalogItem.Kind.QUOTA_PACKAGE, CatalogItem.Kind.DEDICATED_POOL):
        return Decimal(-(-(ends_at - starts_at) // MONTH))
    return Decimal(int((ends_at - starts_at).total_seconds())) / SECONDS_PER_HOUR


def billed_hours(quantity_seconds: Decimal, resource: str) -> Decimal:
    """What a unit price multiplies for ``quantity_seconds`` of ``resource``: GPU-hours (a
    share's milli-GPU counted as its fraction of a GPU) or MIG instance-hours."""
    hours = quantity_seconds / SECONDS_PER_HOUR
    return hours / MILLI_PER_GPU if resource == "shared" else hours


def usage_cost(unit_price: Decimal, quantity_seconds: Decimal, resource: str) -> Decimal:
    """A record's cost: the unit price times its billed hours, to 10 places, half up, rounded
    once (exactly as the rating in SQL rounds)."""
    per_hour = SECONDS_PER_HOUR * (MILLI_PER_GPU if resource == "shared" else 1)
    with localcontext(prec=60):
        return (unit_price * quantity_seconds / per_hour).quantize(RECORD_PLACES, ROUND_HALF_UP)


def period_price(
    unit_price: Decimal, quantity: int, item: CatalogItem, starts_at: datetime, ends_at: datetime
) -> Decimal:
    """What ``quantity`` of ``item`` from ``starts_at`` to ``ends_at`` costs at ``unit_price``
    (an order's total, a reservation's price): the unit price times the quantity times the
    period's units (``period_units``), in cents."""
    return to_cents(unit_price * quantity * period_units(item, starts_at, ends_at))


def _microseconds(span: timedelta) -> int:
    return span // timedelta(microseconds=1)


def reserved_unit_price(price: Decimal, gpus: int, window: timedelta) -> Decimal:
    """What a reserved GPU-hour of a window of ``gpus`` that costs ``price`` comes to: what
    its records show as their unit price (to 4 places)."""
    return (price * SECONDS_PER_HOUR * 10**6 / (gpus * _microseconds(window))).quantize(
        Decimal("0.0001")
    )


def reserved_cost(price: Decimal, piece: timedelta, window: timedelta) -> Decimal:
    """The share of a window's ``price`` that a ``piece`` of it costs: the window's price
    spread evenly over its length, to the microsecond."""
    return price * _microseconds(piece) / _microseconds(window)


# Which items are offered, and which applies.


def offered_to(*, organization: Organization, at: datetime) -> QuerySet[CatalogItem]:
    """The items the organization may order at ``at``: public ones and those offered to it,
    active then. (``organization`` and ``at`` may be outer references: the rule inside a
    query of usage.)"""
    # One query further in: an outer reference reaches one level further out.
    inner = OuterRef(organization) if isinstance(organization, OuterRef) else organization
    offered = CatalogItem.organizations.through.objects.filter(
        catalogitem=OuterRef("pk"), organization=inner
    )
    return (
        CatalogItem.objects.filter(Q(public=True) | Exists(offered))
        .filter(active_from__lte=at)
        .filter(Q(active_until__isnull=True) | Q(active_until__gt=at))
    )


def on_demand_items(
    *, organization: Organization, gpu_class_id, mig_profile: str, tier_id, at: datetime
) -> QuerySet[CatalogItem]:
    """The on-demand items that may price use of ``gpu_class_id`` (and ``mig_profile``) at
    ``tier_id`` begun at ``at`` (or priced then), the one that does first: of those offered
    to the organization then, one for the tier before one for every tier, then by slug. (Any
    argument may be an outer reference: the rule inside a query of usage.)"""
    return (
        offered_to(organization=organization, at=at)
        .filter(kind=CatalogItem.Kind.ON_DEMAND, gpu_class=gpu_class_id, mig_profile=mig_profile)
        .filter(Q(tier=tier_id) | Q(tier__isnull=True))
        .order_by(F("tier").asc(nulls_last=True), "slug")
    )


def reservation_item(
    *, organization: Organization, gpu_class_id, mig_profile: str, at: datetime
) -> CatalogItem | None:
    """The reservation item that prices reserving ``gpu_class_id`` (and ``mig_profile``) asked
    for at ``at``: of those offered to the organization then, the first by slug."""
    return (
        offered_to(organization=organization, at=at)
        .filter(kind=CatalogItem.Kind.RESERVATION, gpu_class=gpu_class_id, mig_profile=mig_profile)
        .order_by("slug")
        .first()
    )


# Which version of an item's price is in force: of the versions that may apply to the
# organization (its own and the list's; another organization's never) and have started, its
# own before the list's, then the latest. The next one: the first to start later that is in
# force once it has started (a list price never while one of the organization's own is).


def _may_apply(version: PriceVersion, organization_id) -> bool:
    return version.organization_id is None or version.organization_id == organization_id


def version_in_force(
    versions: Iterable[PriceVersion], organization_id, at: datetime
) -> PriceVersion | None:
    """The rule over an item's versions already read (in any order)."""
    started = [v for v in versions if _may_apply(v, organization_id) and v.effective_from <= at]
    return max(
        started, key=lambda v: (v.organization_id is not None, v.effective_from), default=None
    )


def version_next(
    versions: Iterable[PriceVersion], organization_id, at: datetime
) -> PriceVersion | None:
    """The next version, by the rule, over an item's versions already read."""
    versions = list(versions)
    later = [v for v in versions if _may_apply(v, organization_id) and v.effective_from > at]
    return next(
        (
            v
            for v in sorted(later, key=lambda v: v.effective_from)
            if version_in_force(versions, organization_id, v.effective_from) is v
        ),
        None,
    )


def versions_applying(versions: QuerySet[PriceVersion], organization) -> QuerySet:
    """Of ``versions``, those that may apply to ``organization`` (an Organization, its key,
    an outer reference, or None: the list's only)."""
    if organization is None:
        return versions.filter(organization__isnull=True)
    return versions.filter(Q(organization__isnull=True) | Q(organization=organization))


def versions_in_force(
    versions: QuerySet[PriceVersion], *, organization, at
) -> QuerySet[PriceVersion]:
    """The rule as a query: of ``versions`` (one item's), those that may apply to
    ``organization`` and started by ``at``, the one in force first."""
    return (
        versions_applying(versions, organization)
        .filter(effective_from__lte=at)
        .order_by(F("organization").asc(nulls_last=True), "-effective_from")
    )


def versions_next(versions: QuerySet[PriceVersion], *, organization, at) -> QuerySet[PriceVersion]:
    """The next version by the rule as a query: of ``versions`` (one item's), those that may
    apply to ``organization``, start after ``at`` and are in force once started, the next
    first."""
    later = versions_applying(versions, organization).filter(effective_from__gt=at)
    if organization is not None:
        own_started = PriceVersion.objects.filter(
            item=OuterRef("item"),
            organization=organization,
            effective_from__lte=OuterRef("effective_from"),
        )
        later = later.filter(Q(organization__isnull=False) | ~Exists(own_started))
    return later.order_by("effective_from")


def price_in_force(
    *, item: CatalogItem, at: datetime, organization: Organization | None = None
) -> PriceVersion | None:
    """The version of the item's price in force at ``at`` for ``organization`` (None: the
    list price in force)."""
    return versions_in_force(item.prices.all(), organization=organization, at=at).first()
