"""The arithmetic of prices: what a unit price multiplies, and the one rounding rule: half up
to cents, once per amount, and for rated use once per invoice line (its records' costs, kept to
10 places, summed first); every figure of money the portal shows adds amounts rounded so
(``selectors.charged``), so the usage API and the invoices agree to the cent."""

from datetime import UTC, datetime, timedelta, tzinfo
from decimal import ROUND_HALF_UP, Decimal, localcontext

from .models import CatalogItem

SECONDS_PER_HOUR = 3600
MONTH = timedelta(days=30)
CENT = Decimal("0.01")
# A billing record keeps its cost to 10 places; invoices round lines to cents.
RECORD_PLACES = Decimal("1E-10")
MILLI_PER_GPU = Decimal(1000)


def hour_floor(moment: datetime) -> datetime:
    """The whole UTC hour ``moment`` falls in: records are rated by UTC hours."""
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


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


def to_cents(amount: Decimal) -> Decimal:
    return amount.quantize(CENT, ROUND_HALF_UP)


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
