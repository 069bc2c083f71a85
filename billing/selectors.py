"""Reads of billing, scoped to the caller's organizations; and what waits for operators."""

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db.models import (
    Case,
    DateTimeField,
    DecimalField,
    Max,
    Min,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    When,
)
from django.db.models.functions import Coalesce, TruncDate

from portal import clock
from portal.db import one_or_not_found
from portal.errors import Conflict
from scheduling import selectors as scheduling_selectors
from scheduling.models import QuotaRequest, Reservation
from tenants.models import Organization
from tenants.permissions import Action, Caller, authorize, require_operator

from .models import (
    BillingRecord,
    Budget,
    CancellationCharge,
    CatalogItem,
    Credit,
    Invoice,
    Order,
    PriceVersion,
    UsageInterval,
    UsageReconciliation,
)
from .pricing import MONTH, billed_hours, month_bounds, month_of, period_units, to_cents

# The price columns as the model stores them (SQLite answers a price with more places: pages
# show 4).
FIELDS = {
    "unit_price": DecimalField(max_digits=14, decimal_places=4),
    "effective_from": DateTimeField(),
}


def price_in_force(
    *, item: CatalogItem, at: datetime, organization: Organization | None = None
) -> PriceVersion | None:
    """The version of the item's price in force at ``at`` for ``organization``: the latest of
    its own that started by then, or else the latest list price that did."""
    started = item.prices.filter(effective_from__lte=at).order_by("-effective_from")
    if organization is not None:
        own = started.filter(organization=organization).first()
        if own is not None:
            return own
    return started.filter(organization__isnull=True).first()


def offered_to(*, organization: Organization, at: datetime) -> QuerySet[CatalogItem]:
    """The items the organization may order at ``at``: public ones and those offered to it,
    active then."""
    return (
        CatalogItem.objects.filter(Q(public=True) | Q(organizations=organization))
        .filter(active_from__lte=at)
        .filter(Q(active_until__isnull=True) | Q(active_until__gt=at))
        .distinct()
    )


def catalog_for(*, caller: Caller, organization: Organization, at: datetime) -> QuerySet:
    """The items the organization may order at ``at`` (public ones and those offered to it,
    active then), each with ``unit_price`` and ``price_from`` (the price in force for it, as
    ``price_in_force`` says) and ``next_price`` and ``next_price_from`` (the next version that
    will apply to it: its own, or a list price while it has none of its own in force)."""
    authorize(caller=caller, organization=organization, action=Action.ORGANIZATION_VIEW)

    def first(field: str, owner: Organization | None, *, upcoming: bool) -> Subquery:
        versions = PriceVersion.objects.filter(item=OuterRef("pk"))
        versions = (
            versions.filter(organization=owner)
            if owner
            else versions.filter(organization__isnull=True)
        )
        if upcoming:
            versions = versions.filter(effective_from__gt=at).order_by("effective_from")
        else:
            versions = versions.filter(effective_from__lte=at).order_by("-effective_from")
        return Subquery(versions.values(field)[:1], output_field=FIELDS[field])

    def applying(field: str, *, upcoming: bool):
        """The organization's own version of ``field``, else the list's (for upcoming ones,
        only while none of its own is in force)."""
        listed = first(field, None, upcoming=upcoming)
        if upcoming:
            listed = Case(When(own_price__isnull=True, then=listed), output_field=FIELDS[field])
        return Coalesce(first(field, organization, upcoming=upcoming), listed)

    return (
        offered_to(organization=organization, at=at)
        .select_related("gpu_class", "tier")
        .annotate(own_price=first("unit_price", organization, upcoming=False))
        .annotate(
            unit_price=applying("unit_price", upcoming=False),
            price_from=applying("effective_from", upcoming=False),
            next_price=applying("unit_price", upcoming=True),
            next_price_from=applying("effective_from", upcoming=True),
        )
    )


def order_list(*, caller: Caller, organization: Organization) -> QuerySet[Order]:
    authorize(caller=caller, organization=organization, action=Action.ORGANIZATION_VIEW)
    return Order.objects.filter(organization=organization).select_related(
        "organization", "item", "project", "created_by"
    )


def order_get(*, caller: Caller, organization: Organization, pk) -> Order:
    """One of the organization's orders; any other id is a 404."""
    return one_or_not_found(order_list(caller=caller, organization=organization), pk, "order")


@dataclass(frozen=True)
class PendingApprovals:
    reservations: list
    quota_requests: list
    orders: list

    def __len__(self) -> int:
        return len(self.reservations) + len(self.quota_requests) + len(self.orders)


def approvals_pending(*, caller: Caller) -> PendingApprovals:
    """What waits for an operator, in every organization, oldest first."""
    require_operator(caller)
    return PendingApprovals(
        reservations=list(
            Reservation.objects.filter(state=Reservation.State.REQUESTED)
            .select_related("organization", "gpu_class", "pool", "requested_by")
            .order_by("requested_at")
        ),
        quota_requests=list(
            QuotaRequest.objects.filter(state=QuotaRequest.State.REQUESTED)
            .select_related("organization", "project", "gpu_class", "requested_by")
            .order_by("requested_at")
        ),
        orders=list(
            Order.objects.filter(state=Order.State.SUBMITTED)
            .select_related("organization", "item", "created_by")
            .order_by("submitted_at")
        ),
    )


def order_for_operator(*, caller: Caller, pk) -> Order:
    """Any organization's order, for an operator's decision."""
    require_operator(caller)
    return one_or_not_found(Order.objects.select_related("organization", "item"), pk, "order")


def cancellation_charge_list(
    *, caller: Caller, organization: Organization
) -> QuerySet[CancellationCharge]:
    """The organization's cancellation charges: money, for its owners and admins."""
    authorize(caller=caller, organization=organization, action=Action.INVOICE_VIEW)
    return CancellationCharge.objects.filter(organization=organization).select_related(
        "reservation__gpu_class", "reservation__pool", "item", "order"
    )


def order_of_reservation(reservation: Reservation) -> Order | None:
    """The fulfilled order that made ``reservation``, if one did."""
    return (
        Order.objects.filter(
            organization=reservation.organization_id,
            state=Order.State.FULFILLED,
            fulfilled_objects__icontains=str(reservation.pk),
        )
        .select_related("item")
        .first()
    )


def reservation_terms(
    reservation: Reservation, *, at: datetime | None = None
) -> tuple[Order | None, CatalogItem | None, Decimal]:
    """The order that bought the reservation (if any), the item whose terms apply, and the
    price of the whole window: the order's total, or else the reserved GPU-hours at the price
    in force when it was asked for (or at ``at``: finance pricing it after the fact), of the
    reservation item the organization was offered then of the class and MIG profile (none:
    nothing to charge, and no item)."""
    order = order_of_reservation(reservation)
    if order is not None:
        return order, order.item, order.total
    asked = at or reservation.requested_at
    item = (
        offered_to(organization=reservation.organization, at=asked)
        .filter(kind=CatalogItem.Kind.RESERVATION, gpu_class=reservation.gpu_class_id)
        .filter(mig_profile=reservation.mig_profile)
        .order_by("slug")
        .first()
    )
    version = item and price_in_force(item=item, at=asked, organization=reservation.organization)
    if version is None:
        return None, None, Decimal(0)
    hours = period_units(item, reservation.starts_at, reservation.ends_at)
    return None, item, to_cents(version.unit_price * reservation.gpus * hours)


def cancellation_quote(*, reservation: Reservation, at: datetime) -> CancellationCharge:
    """What cancelling ``reservation`` at ``at`` costs (unsaved): free until the item's
    ``free_cancellation_hours`` before the window, then its ``cancellation_charge_percent`` of
    the price of what is left of the window (the part already begun is billed as reserved
    use). Rounded half up to cents."""
    order, item, value = reservation_terms(reservation)
    length = reservation.ends_at - reservation.starts_at
    left = max(reservation.ends_at - max(at, reservation.starts_at), timedelta(0))
    remaining = to_cents(value * Decimal(left / length))
    charge = CancellationCharge(
        reservation=reservation,
        organization=reservation.organization,
        order=order,
        item=item,
        cancelled_at=at,
        remaining_value=remaining,
        amount=Decimal(0),
    )
    currency = settings.PORTAL_CURRENCY
    if item is None:
        charge.explanation = (
            f"No catalog item prices {reservation.gpu_class.name} reservations for"
            f" {reservation.organization.slug}: nothing to charge."
        )
        return charge
    charge.free_until = reservation.starts_at - timedelta(hours=item.free_cancellation_hours)
    if at < charge.free_until:
        charge.explanation = (
            f"Free: cancelled before {charge.free_until:%Y-%m-%d %H:%M} UTC,"
            f" {item.free_cancellation_hours} h before the window ({item.name})."
        )
        return charge
    charge.percent = item.cancellation_charge_percent
    charge.amount = to_cents(remaining * charge.percent / 100)
    charge.explanation = (
        f"{charge.percent}% of {remaining} {currency}, the price of the"
        f" {left / timedelta(hours=1):g} h of the window left, cancelled after"
        f" {charge.free_until:%Y-%m-%d %H:%M} UTC ({item.name})."
    )
    return charge


def cancellation_charge_get(
    *, caller: Caller, organization: Organization, reservation: Reservation, now: datetime
) -> CancellationCharge:
    """``cancellation_charge_of`` a reservation of the organization, for those who may see its
    money."""
    authorize(caller=caller, organization=organization, action=Action.INVOICE_VIEW)
    return cancellation_charge_of(reservation=reservation, now=now)


def cancellation_charge_of(*, reservation: Reservation, now: datetime) -> CancellationCharge:
    """What cancelling the reservation cost (recorded, or quoted as of its cancellation until
    the worker records it), or would cost now while it holds GPUs. A Conflict for one that
    was never cancelled and holds nothing."""
    recorded = CancellationCharge.objects.filter(reservation=reservation).first()
    if recorded is not None:
        return recorded
    if reservation.state == Reservation.State.CANCELLED:
        return cancellation_quote(reservation=reservation, at=reservation.cancelled_at)
    if not reservation.is_holding:
        raise Conflict(
            f"The reservation is {reservation.state}: there is nothing to cancel.",
            code="not_holding",
        )
    return cancellation_quote(reservation=reservation, at=now)


def usage_reconciliation_last(*, caller: Caller) -> UsageReconciliation | None:
    """The last comparison of placed with billed GPU-seconds, for operators."""
    require_operator(caller)
    return UsageReconciliation.objects.first()


def _next_month(first: date, months: int) -> date:
    index = first.year * 12 + first.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def invoice_period(
    *, organization: Organization, year: int, month: int
) -> tuple[datetime, datetime]:
    """The period [start, end) that the organization's invoice for the month covers: the
    month in its time zone, unless invoices of its months say otherwise. A month once drafted
    keeps its period (also drafted again after a void), and a neighbour's fixes the edge they
    share (a month starts where the last invoiced one ends, and ends where the next one
    starts), so a change of time zone applies from the next period and no hour is invoiced
    twice or never."""
    first = date(year, month, 1)
    before, after = _next_month(first, -1), _next_month(first, 1)
    neighbours = {
        month: invoice
        for (_, month), invoice in _of_months(
            Invoice.objects.filter(organization=organization, month__in=[before, first, after])
        ).items()
    }
    return _period_between(
        month_bounds(year, month, organization.zone),
        neighbours.get(before),
        neighbours.get(first),
        neighbours.get(after),
    )


def _of_months(invoices: QuerySet[Invoice]) -> dict[tuple, Invoice]:
    """Per (organization, month), the invoice whose period stands: the one not void, else
    the last voided."""
    chosen = {}
    ranked = sorted(
        invoices.filter(corrects__isnull=True),
        key=lambda i: (i.state != Invoice.State.VOID, i.voided_at or i.created_at),
    )
    for invoice in ranked:
        chosen[(invoice.organization_id, invoice.month)] = invoice
    return chosen


def _period_between(bounds, before, own, after) -> tuple[datetime, datetime]:
    if own is not None:
        return own.period_start, own.period_end
    start, end = bounds
    return (
        before.period_end if before is not None else start,
        after.period_start if after is not None else end,
    )


def invoice_periods(
    *, organizations: QuerySet[Organization], year: int, month: int, zone
) -> dict[object, tuple[datetime, datetime]]:
    """``invoice_period`` of each of ``organizations`` (all in ``zone``) whose period is not
    the month in ``zone``, in one query."""
    first = date(year, month, 1)
    months = [_next_month(first, -1), first, _next_month(first, 1)]
    bounds = month_bounds(year, month, zone)
    neighbours: dict[object, dict[date, Invoice]] = {}
    of_months = _of_months(Invoice.objects.filter(organization__in=organizations, month__in=months))
    for (organization, month), invoice in of_months.items():
        neighbours.setdefault(organization, {})[month] = invoice
    periods = {}
    for organization, invoices in neighbours.items():
        period = _period_between(bounds, *(invoices.get(m) for m in months))
        if period != bounds:
            periods[organization] = period
    return periods


def period_of(*, organization: Organization, at: datetime) -> tuple[datetime, datetime]:
    """The invoice period (``invoice_period``) that ``at`` falls in."""
    local = at.astimezone(organization.zone)
    first = date(local.year, local.month, 1)
    for months in (0, -1, 1):
        moment = _next_month(first, months)
        start, end = invoice_period(organization=organization, year=moment.year, month=moment.month)
        if start <= at < end:
            return start, end
    return month_of(at, organization.zone)


def credit_balance(*, organization: Organization) -> Decimal:
    """The organization's credit not yet spent: granted, less what issued invoices took (a
    voided one gives its share back)."""
    granted = Credit.objects.filter(organization=organization).aggregate(total=Sum("amount"))
    taken = Invoice.objects.filter(
        organization=organization,
        corrects__isnull=True,
        state__in=[Invoice.State.ISSUED, Invoice.State.PAID],
    ).aggregate(total=Sum("credits"))
    return to_cents((granted["total"] or Decimal(0)) - (taken["total"] or Decimal(0)))


def credit_list(*, caller: Caller, organization: Organization) -> QuerySet[Credit]:
    """The organization's credit grants, for its owners and admins."""
    authorize(caller=caller, organization=organization, action=Action.INVOICE_VIEW)
    return Credit.objects.filter(organization=organization).order_by("-granted_at", "pk")


def invoice_list(*, caller: Caller, organization: Organization) -> QuerySet[Invoice]:
    """The organization's invoices and credit notes, for its owners and admins."""
    authorize(caller=caller, organization=organization, action=Action.INVOICE_VIEW)
    return (
        Invoice.objects.filter(organization=organization)
        .select_related("organization", "corrects")
        .prefetch_related("lines__project", "lines__gpu_class")
    )


def invoice_get(*, caller: Caller, organization: Organization, pk) -> Invoice:
    return one_or_not_found(invoice_list(caller=caller, organization=organization), pk, "invoice")


def invoice_line_usage(*, invoice: Invoice, line_pk) -> QuerySet[UsageInterval]:
    """The usage intervals behind a line of ``invoice`` (got through ``invoice_get``), each
    with the seconds the line bills of it: what a tenant reconciles with its workloads."""
    line = one_or_not_found(invoice.lines.all(), line_pk, "invoice line")
    records = BillingRecord.objects.filter(
        organization=invoice.organization_id,
        starts_at__gte=invoice.period_start,
        starts_at__lt=invoice.period_end,
        project=line.project_id,
        gpu_class=line.gpu_class_id,
        mig_profile=line.mig_profile,
        resource=line.resource,
        charge=line.charge,
        unit_price=line.unit_price,
    )
    billed = records.filter(interval=OuterRef("pk")).values("interval")
    return (
        UsageInterval.objects.filter(pk__in=records.values("interval"))
        .annotate(
            billed_seconds=Subquery(
                billed.annotate(total=Sum("quantity_seconds")).values("total")[:1],
                output_field=DecimalField(max_digits=24, decimal_places=6),
            )
        )
        .select_related("workload", "project", "gpu_class", "tier")
        .order_by("started_at", "pk")
    )


def invoices_of_month(*, caller: Caller, year: int, month: int) -> QuerySet[Invoice]:
    """Every invoice and credit note of a month (each organization's, in its time zone), for
    finance."""
    require_operator(caller)
    return Invoice.objects.filter(month=date(year, month, 1)).order_by(
        "number", "organization__slug"
    )


def budget_get(*, caller: Caller, organization: Organization, pk) -> Budget:
    authorize(caller=caller, organization=organization, action=Action.INVOICE_VIEW)
    budgets = Budget.objects.filter(organization=organization).select_related("organization")
    return one_or_not_found(budgets, pk, "budget")


def budget_list(*, caller: Caller, organization: Organization) -> list[Budget]:
    """The organization's budgets, each with ``spent`` this month, for its owners and
    admins."""
    authorize(caller=caller, organization=organization, action=Action.INVOICE_VIEW)
    now = clock.now()
    budgets = Budget.objects.filter(organization=organization).select_related(
        "organization", "project"
    )
    return [budget_spent(budget, at=now) for budget in budgets]


def budget_spent(budget: Budget, *, at: datetime) -> Budget:
    """``budget`` with ``spent``: its scope's spend in ``at``'s month."""
    budget.spent = spend(organization=budget.organization, project_id=budget.project_id, at=at)
    return budget


# What an invoice line sums: the records of one project, class, profile, resource, charge
# and unit price.
LINE_KEY = ("project", "gpu_class", "mig_profile", "resource", "charge", "unit_price")


def charged(records: QuerySet[BillingRecord]) -> Decimal:
    """What ``records`` come to on an invoice, by the one rounding rule (``pricing``): their
    cost summed per invoice line, each line rounded half up to cents once, then added."""
    lines = records.values(*LINE_KEY).annotate(cost=Sum("cost")).order_by(*LINE_KEY)
    return sum((to_cents(line["cost"] or Decimal(0)) for line in lines), Decimal(0))


def spend(*, organization: Organization, project_id=None, at: datetime, period=None) -> Decimal:
    """What the organization (or one project of it) has spent in the invoice period ``at``
    falls in (``period_of``; or ``period``) so far, as its invoice counts it: its rated use and
    reserved capacity, its quota packages' months, and (for the organization) its
    cancellation charges."""
    organization_id = organization.pk
    start, end = period or period_of(organization=organization, at=at)
    records = BillingRecord.objects.filter(
        organization=organization_id, starts_at__gte=start, starts_at__lt=end
    )
    if project_id is not None:
        records = records.filter(project=project_id)
    total = charged(records)
    if project_id is None:
        total += CancellationCharge.objects.filter(
            organization=organization_id,
            cancelled_at__gte=start,
            cancelled_at__lt=end,
            amount__gt=0,
        ).aggregate(total=Sum("amount"))["total"] or Decimal(0)
    packages = package_charges(organization_id=organization_id, starts_at=start, ends_at=end)
    total += sum(
        (c.amount for c in packages if project_id in (None, c.order.project_id)), Decimal(0)
    )
    # Every part is in cents already; SQLite's sums come back with float digits beyond them.
    return to_cents(total)


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


@dataclass(frozen=True)
class UnpricedResource:
    """Something the cluster offers (a class's whole GPUs and shares, or one of its MIG
    profiles) that no list price covers now."""

    gpu_class: str
    mig_profile: str
    kind: str  # CatalogItem.Kind

    def __str__(self) -> str:
        what = self.gpu_class + (f" {self.mig_profile} instances" if self.mig_profile else "")
        return f"{what}: no {CatalogItem.Kind(self.kind).label.split(' (')[0].lower()} price"


def resources_unpriced(*, at: datetime) -> list[UnpricedResource]:
    """Operators: what the cluster's pools offer (each class's GPUs and GPU shares, each of
    its MIG profiles) with no public on-demand or reservation item for every tier that has a
    list price in force at ``at``: use of it would be rated at no price."""
    classes = {pool.gpu_class.pk: pool.gpu_class for pool in scheduling_selectors.pool_list()}
    priced = set(
        PriceVersion.objects.filter(
            organization__isnull=True,
            effective_from__lte=at,
            item__public=True,
            item__tier__isnull=True,
            item__active_from__lte=at,
            item__kind__in=(CatalogItem.Kind.ON_DEMAND, CatalogItem.Kind.RESERVATION),
        )
        .filter(Q(item__active_until__isnull=True) | Q(item__active_until__gt=at))
        .values_list("item__gpu_class", "item__mig_profile", "item__kind")
    )
    return [
        UnpricedResource(gpu_class=gpu_class.name, mig_profile=profile, kind=kind)
        for gpu_class in sorted(classes.values(), key=lambda c: c.name)
        for profile in ["", *sorted(gpu_class.mig_profiles or [])]
        for kind in (CatalogItem.Kind.ON_DEMAND, CatalogItem.Kind.RESERVATION)
        if (gpu_class.pk, profile, kind) not in priced
    ]
