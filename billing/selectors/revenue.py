"""What the operator earned, per pool, class and organization, read off its invoices to the
cent: the lines of the month's issued invoices and credit notes (and of its drafts while the
month is open: ``Revenue.drafts`` says how many), discounts and packages as invoiced, the
preemption contract's credits (lost work, lending) subtracted as their negative lines are.

A line names a project, class and charge, not a pool: each line is split among the pools its
sources ran on (its billing records, credits and cancelled reservations) in proportion to what
they came to, by largest remainder in cents, so the pools' parts add up to the line exactly. A
line with no pool of its own (a quota package of a class) is split among the class's pools by
their capacity; a class with no pool keeps it apart (``NO_POOL``), and the books show it on
a row of its own (``books.unplaced_books``)."""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal

from django.db.models import F, Q, Sum
from django.db.models.functions import Coalesce

from scheduling import selectors as scheduling_selectors

from ..allocation import split
from ..models import BillingRecord, CancellationCharge, ContractCredit, Invoice, InvoiceLine

CENT = Decimal("0.01")
# Weights are compared in ten-billionths (the records' own places).
WEIGHT = Decimal("1E10")
NO_POOL = ""
# What a line is split by: its charge and what it bought, as its sources are grouped.
SOURCE_KEY = ("project", "gpu_class", "mig_profile", "resource")


@dataclass
class Revenue:
    """A period's invoiced amounts by (pool name, GPU class id, organization id), in cents."""

    amounts: dict[tuple, Decimal] = field(default_factory=lambda: defaultdict(Decimal))
    # Drafts read (their month is still open: their figures are as of their last build).
    drafts: int = 0

    def of_pool(self, name: str) -> Decimal:
        return sum((a for (pool, _, _), a in self.amounts.items() if pool == name), Decimal(0))

    def by_organization(self, name: str) -> dict:
        """The pool's revenue per organization id."""
        found = defaultdict(Decimal)
        for (pool, _, organization), amount in self.amounts.items():
            if pool == name:
                found[organization] += amount
        return dict(found)

    def unplaced(self, placed: set[str]) -> dict:
        """What was earned on no pool of ``placed``, per GPU class id (None: no class), the
        classes that earned nothing left out."""
        found = defaultdict(Decimal)
        for (pool, gpu_class, _), amount in self.amounts.items():
            if pool not in placed:
                found[gpu_class] += amount
        return {gpu_class: amount for gpu_class, amount in found.items() if amount}

    @property
    def total(self) -> Decimal:
        return sum(self.amounts.values(), Decimal(0))


def revenue(*, starts_at: datetime, ends_at: datetime) -> Revenue:
    """The revenue of the invoices of the months that start in [starts_at, ends_at): the
    issued ones and their credit notes, and the drafts of months not yet issued."""
    invoices = list(
        Invoice.objects.filter(
            month__gte=first_day_from(starts_at), month__lt=first_day_from(ends_at)
        ).exclude(state=Invoice.State.VOID)
    )
    found = Revenue(drafts=sum(i.state == Invoice.State.DRAFT for i in invoices))
    by_period = defaultdict(list)
    for invoice in invoices:
        by_period[(invoice.period_start, invoice.period_end)].append(invoice)
    capacities = {}
    for (period_start, period_end), group in by_period.items():
        organizations = {i.organization_id for i in group}
        weights = _pool_weights(organizations, period_start, period_end)
        lines = (
            InvoiceLine.objects.filter(invoice__in=group)
            .values("invoice__organization", "charge", *SOURCE_KEY)
            .annotate(amount=Sum("amount"))
            .order_by("invoice__organization", "charge", *SOURCE_KEY)
        )
        for line in lines:
            organization = line.pop("invoice__organization")
            amount = line.pop("amount")
            key = (organization, line["charge"], *(line[k] for k in SOURCE_KEY))
            pools = weights.get(key) or _capacity_weights(line["gpu_class"], capacities)
            for pool, part in _split_cents(amount, pools).items():
                found.amounts[(pool, line["gpu_class"], organization)] += part
    return found


def first_day_from(moment: datetime) -> date:
    """The first day whose start (UTC) is not before ``moment``."""
    moment = moment.astimezone(UTC)
    day = moment.date()
    return day if moment == datetime.combine(day, time(), UTC) else day + timedelta(days=1)


def _pool_weights(organizations, starts_at: datetime, ends_at: datetime) -> dict:
    """What each line's sources came to per pool, by (organization, charge, *SOURCE_KEY)."""
    weights: dict[tuple, dict[str, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    pool = Coalesce("interval__pool", "reservation__pool__name")
    sources = (
        BillingRecord.objects.filter(
            organization__in=organizations, starts_at__gte=starts_at, starts_at__lt=ends_at
        )
        .values("organization", "charge", *SOURCE_KEY, pool_name=pool)
        .annotate(weight=Sum("cost")),
        ContractCredit.objects.filter(
            organization__in=organizations, at__gte=starts_at, at__lt=ends_at
        )
        .values("organization", *SOURCE_KEY, charge=F("kind"), pool_name=pool)
        .annotate(weight=Sum("amount")),
    )
    for rows in sources:
        for row in rows.order_by():
            key = (row["organization"], row["charge"], *(row[k] for k in SOURCE_KEY))
            weights[key][row["pool_name"] or NO_POOL] += abs(row["weight"] or 0)
    cancellations = CancellationCharge.objects.filter(
        Q(amount__gt=0),
        organization__in=organizations,
        cancelled_at__gte=starts_at,
        cancelled_at__lt=ends_at,
    ).values_list(
        "organization",
        "reservation__gpu_class",
        "reservation__mig_profile",
        "reservation__pool__name",
        "amount",
    )
    for organization, gpu_class, profile, pool_name, amount in cancellations:
        weights[(organization, "cancellation", None, gpu_class, profile, "")][pool_name] += amount
    return weights


def _capacity_weights(gpu_class, capacities: dict) -> dict[str, Decimal]:
    """The class's pools by their schedulable capacity (a line of no pool of its own)."""
    if gpu_class not in capacities:
        found = scheduling_selectors.class_capacities(gpu_class=gpu_class) if gpu_class else {}
        capacities[gpu_class] = {name: Decimal(gpus) for name, gpus in found.items() if gpus}
    return capacities[gpu_class] or {NO_POOL: Decimal(1)}


def _split_cents(amount: Decimal, weights: dict[str, Decimal]) -> dict[str, Decimal]:
    """``amount`` split among ``weights``' pools in cents, by largest remainder: the parts
    add up to it exactly."""
    cents = int(amount / CENT)
    sign = -1 if cents < 0 else 1
    integer = {pool: int(w * WEIGHT) for pool, w in sorted(weights.items()) if w > 0}
    if not integer:
        integer = dict.fromkeys(sorted(weights), 1)
    parts = split(abs(cents), integer)
    return {pool: sign * part * CENT for pool, part in parts.items()}
