"""Reads of use and its money: what records come to, what an organization spent, use per
day and unit, quota packages' months, and what no price covered."""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from django.db.models import Max, Min, QuerySet, Sum
from django.db.models.functions import TruncDate

from portal import clock
from tenants.models import Organization
from tenants.permissions import Action, Caller, authorize, require_operator

from ..models import (
    BillingRecord,
    CancellationCharge,
    CatalogItem,
    Order,
    UsageInterval,
    UsageReconciliation,
)
from ..pricing import MONTH, billed_hours, period_units, to_cents
from .credits import contract_credit_lines
from .invoices import period_of


def usage_reconciliation_last(*, caller: Caller) -> UsageReconciliation | None:
    """The last comparison of placed with billed GPU-seconds, for operators."""
    require_operator(caller)
    return UsageReconciliation.objects.first()


# What an invoice line sums: the records of one project, class, profile, resource, charge
# and unit price.
LINE_KEY = ("project", "gpu_class", "mig_profile", "resource", "charge", "unit_price")


def charged(records: QuerySet[BillingRecord]) -> Decimal:
    """What ``records`` come to on an invoice, by the one rounding rule (``pricing``): their
    cost summed per invoice line, each line rounded half up to cents once, then added."""
    return sum(
        (to_cents(line["cost"] or Decimal(0)) for line in charged_lines(records)), Decimal(0)
    )


def charged_lines(records: QuerySet[BillingRecord]) -> QuerySet:
    """``records`` summed per invoice line (``LINE_KEY``), unrounded."""
    return records.values(*LINE_KEY).annotate(cost=Sum("cost")).order_by(*LINE_KEY)


def spend(*, organization: Organization, project_id=None, at: datetime, period=None) -> Decimal:
    """What the organization (or one project of it) has spent in the invoice period ``at``
    falls in (``period_of``; or ``period``) so far, as its invoice counts it: its rated use and
    reserved capacity, its quota packages' months, and (for the organization) its
    cancellation charges, less the preemption contract's credits."""
    return spends(organization=organization, scopes={project_id}, at=at, period=period)[project_id]


def spends(*, organization: Organization, scopes, at: datetime, period=None) -> dict:
    """``spend`` of each scope (None: the organization; else a project's id) at once, in the
    same few queries however many scopes."""
    organization_id = organization.pk
    start, end = period or period_of(organization=organization, at=at)
    records = BillingRecord.objects.filter(
        organization=organization_id, starts_at__gte=start, starts_at__lt=end
    )
    totals: defaultdict = defaultdict(Decimal)
    for line in charged_lines(records):
        for scope in {None, line["project"]}:
            totals[scope] += to_cents(line["cost"] or Decimal(0))
    if None in scopes:
        totals[None] += CancellationCharge.objects.filter(
            organization=organization_id,
            cancelled_at__gte=start,
            cancelled_at__lt=end,
            amount__gt=0,
        ).aggregate(total=Sum("amount"))["total"] or Decimal(0)
    for charge in package_charges(organization_id=organization_id, starts_at=start, ends_at=end):
        for scope in {None, charge.order.project_id}:
            totals[scope] += charge.amount
    for credit in contract_credit_lines(
        organization_id=organization_id, starts_at=start, ends_at=end
    ):
        for scope in {None, credit.project.pk if credit.project else None}:
            totals[scope] -= credit.amount
    # Every part is in cents already; SQLite's sums come back with float digits beyond them.
    return {scope: to_cents(totals[scope]) for scope in scopes}


HOURS = Decimal("0.0001")


def use_in_units(seconds: Decimal, resource: str) -> dict[str, Decimal | None]:
    """Rated seconds of ``resource`` in the unit each is counted in, each under its own name:
    ``gpu_hours`` for whole GPUs and GPU shares (a share's fraction counted), or
    ``mig_instance_hours`` for MIG instances (the other None). Never one added to the other."""
    hours = billed_hours(seconds, resource).quantize(HOURS)
    mig = resource == UsageInterval.Resource.MIG
    return {"gpu_hours": None if mig else hours, "mig_instance_hours": hours if mig else None}


@dataclass(frozen=True)
class UsageSummary:
    rows: list[dict]
    # Per class, MIG profile and resource over the period: each in its unit (``use_in_units``).
    totals: list[dict]
    # GPU-hours of whole GPUs and GPU shares, every class; MIG instance-hours are not in it
    # (``totals`` has them per class and profile).
    gpu_hours: Decimal
    cost: Decimal
    # This month's cost so far and where the run rate of its rated use takes it by the
    # month's end, one-off charges added once (None unless the period is the current month).
    month_to_date: Decimal | None
    forecast: Decimal | None
    # The preemption contract's credits placed in the period (``contract_credit_lines``),
    # and what they take off in all.
    credits: list = field(default_factory=list)
    credited: Decimal = Decimal(0)

    @property
    def mig_totals(self) -> list[dict]:
        """The MIG totals, per class and profile, in instance-hours."""
        return [total for total in self.totals if total["mig_instance_hours"] is not None]


def usage_summary(
    *, caller: Caller, organization: Organization, starts_at: datetime, ends_at: datetime
) -> UsageSummary:
    """Use and cost per day, class, profile, resource, tier and project over [starts_at,
    ends_at), as rated, and per class, profile and resource: whole GPUs and shares in
    GPU-hours, MIG instances in instance-hours, each under its own name, never added
    together (each row's cost rounded for display; the total ``cost`` by the invoice's rule,
    ``charged``); and, when the period is the current invoice period (``period_of``), the
    month to date as its draft invoice's subtotal counts it and a forecast to its end from
    the run rate so far."""
    authorize(caller=caller, organization=organization, action=Action.INVOICE_VIEW)
    groups = (
        BillingRecord.objects.filter(
            organization=organization, starts_at__gte=starts_at, starts_at__lt=ends_at
        )
        .annotate(day=TruncDate("starts_at", tzinfo=organization.zone))
        .values("day", "gpu_class__name", "mig_profile", "resource", "tier__name", "project__slug")
        .annotate(seconds=Sum("quantity_seconds"), cost=Sum("cost"))
        .order_by("day", "gpu_class__name", "mig_profile", "tier__name", "project__slug")
    )
    rows = []
    totals: dict[tuple[str, str, str], dict] = {}
    for group in groups:
        rows.append(
            {
                "day": group["day"],
                "gpu_class": group["gpu_class__name"],
                "mig_profile": group["mig_profile"],
                "resource": group["resource"],
                "tier": group["tier__name"],
                "project": group["project__slug"],
                **use_in_units(group["seconds"], group["resource"]),
                "cost": to_cents(group["cost"] or Decimal(0)),
            }
        )
        key = (group["gpu_class__name"], group["mig_profile"], group["resource"])
        total = totals.setdefault(key, {"seconds": Decimal(0), "cost": Decimal(0)})
        total["seconds"] += group["seconds"]
        total["cost"] += rows[-1]["cost"]
    credits = contract_credit_lines(
        organization_id=organization.pk, starts_at=starts_at, ends_at=ends_at
    )
    now = clock.now()
    month_start, month_end = period_of(organization=organization, at=now)
    month_to_date = forecast = None
    if (starts_at, ends_at) == (month_start, month_end):
        month_to_date = spend(organization=organization, at=now, period=(month_start, month_end))
        # Only what is rated runs at a rate; one-off charges (cancellations, packages) stay.
        rated = charged(
            BillingRecord.objects.filter(
                organization=organization, starts_at__gte=month_start, starts_at__lt=month_end
            )
        )
        elapsed = Decimal((now - month_start) / (month_end - month_start))
        rate_part = to_cents(rated / elapsed) if elapsed > 0 else rated
        forecast = rate_part + month_to_date - rated
    return UsageSummary(
        rows=rows,
        totals=[
            {
                "gpu_class": gpu_class,
                "mig_profile": mig_profile,
                "resource": resource,
                **use_in_units(total["seconds"], resource),
                "cost": total["cost"],
            }
            for (gpu_class, mig_profile, resource), total in sorted(totals.items())
        ],
        gpu_hours=sum(
            (
                billed_hours(total["seconds"], resource)
                for (_, _, resource), total in totals.items()
                if resource != UsageInterval.Resource.MIG
            ),
            Decimal(0),
        ).quantize(HOURS),
        cost=charged(
            BillingRecord.objects.filter(
                organization=organization, starts_at__gte=starts_at, starts_at__lt=ends_at
            )
        ),
        month_to_date=month_to_date,
        forecast=forecast,
        credits=credits,
        credited=sum((credit.amount for credit in credits), Decimal(0)),
    )


@dataclass(frozen=True)
class PackageCharge:
    """One month (30 days) of a fulfilled quota package order, charged in the invoice month
    it starts in (or, for a month that began before the order was fulfilled, the one it was
    fulfilled in: that month's invoice may be issued already)."""

    order: Order
    starts_at: datetime
    amount: Decimal


def package_charges(*, organization_id, starts_at: datetime, ends_at: datetime) -> list:
    """The months of the organization's fulfilled quota packages charged in
    [starts_at, ends_at) (``PackageCharge``), each at the order's unit price times its
    quantity."""
    orders = Order.objects.filter(
        organization=organization_id,
        state=Order.State.FULFILLED,
        item__kind=CatalogItem.Kind.QUOTA_PACKAGE,
        starts_at__lt=ends_at,
        ends_at__gt=starts_at - MONTH,
    ).select_related("item", "project")
    charges = []
    for order in orders:
        months = int(period_units(order.item, order.starts_at, order.ends_at))
        for month in range(months):
            begins = order.starts_at + MONTH * month
            # Approved late (after its period began): billed from its fulfilment on, never
            # into a period whose invoice is issued.
            charged_at = max(begins, order.fulfilled_at or begins)
            if starts_at <= charged_at < ends_at:
                charges.append(
                    PackageCharge(order, begins, to_cents(order.unit_price * order.quantity))
                )
    return charges


def gpu_seconds_rated() -> list[tuple[str, str, str, str, Decimal]]:
    """Operators' /metrics: every rated second of use since the start (reserved capacity
    itself is not use), summed per (organization, GPU class, resource, MIG profile), in the
    resource's unit: GPU-, milli-GPU- or instance-seconds."""
    return list(
        BillingRecord.objects.filter(
            charge__in=(BillingRecord.Charge.ON_DEMAND, BillingRecord.Charge.RESERVED_USE)
        )
        .values_list("organization__slug", "gpu_class__name", "resource", "mig_profile")
        .annotate(seconds=Sum("quantity_seconds"))
        .order_by("organization__slug", "gpu_class__name", "resource", "mig_profile")
    )


@dataclass(frozen=True)
class UnpricedUse:
    """Rated use (or reserved capacity) of one organization that no price covered: billed at
    nothing so far, which an invoice may not be issued with."""

    organization: str
    project: str | None
    gpu_class: str
    mig_profile: str
    resource: str
    charge: str
    # In the resource's unit: GPU-hours (a share's fraction counted) or MIG instance-hours.
    hours: Decimal
    first: datetime
    last: datetime

    @property
    def what(self) -> str:
        """ "A100-80GB mig-1g.10gb instances, on-demand use": what is unpriced, in words."""
        what = self.gpu_class + (f" {self.mig_profile} instances" if self.mig_profile else "")
        if self.resource == UsageInterval.Resource.SHARED:
            what += " shares"
        return f"{what}, {BillingRecord.Charge(self.charge).label.lower()}"

    @property
    def unit(self) -> str:
        return "instance-hours" if self.resource == UsageInterval.Resource.MIG else "GPU-hours"

    def __str__(self) -> str:
        scope = f"{self.organization}/{self.project}" if self.project else self.organization
        return (
            f"{scope}: {self.hours} {self.unit} of {self.what}, from"
            f" {self.first:%Y-%m-%d %H:%M} to {self.last:%Y-%m-%d %H:%M} UTC"
        )


def usage_unpriced(*, records: QuerySet[BillingRecord] | None = None) -> list[UnpricedUse]:
    """Operators: the rated use that no price was in force for (its records have no unit
    price), per organization, project, class, profile, resource and charge; of ``records``
    if given, else of all."""
    records = BillingRecord.objects.all() if records is None else records
    rows = (
        records.filter(unit_price__isnull=True)
        .values(
            "organization__slug",
            "project__slug",
            "gpu_class__name",
            "mig_profile",
            "resource",
            "charge",
        )
        .annotate(seconds=Sum("quantity_seconds"), first=Min("starts_at"), last=Max("ends_at"))
        .order_by("organization__slug", "project__slug", "gpu_class__name", "mig_profile")
    )
    return [
        UnpricedUse(
            organization=row["organization__slug"],
            project=row["project__slug"],
            gpu_class=row["gpu_class__name"],
            mig_profile=row["mig_profile"],
            resource=row["resource"],
            charge=row["charge"],
            hours=billed_hours(row["seconds"], row["resource"]).quantize(Decimal("0.0001")),
            first=row["first"],
            last=row["last"],
        )
        for row in rows
    ]
