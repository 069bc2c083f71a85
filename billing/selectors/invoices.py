"""Reads of invoices: the period each covers, credits, and what the beat drafts."""

from datetime import date, datetime, timedelta
from decimal import Decimal

from django.db.models import DecimalField, OuterRef, QuerySet, Subquery, Sum

from portal.db import one_or_not_found
from tenants.models import Organization
from tenants.permissions import Action, Caller, authorize, require_operator

from ..models import BillingRecord, Credit, Invoice, UsageInterval
from ..pricing import month_bounds, month_of, to_cents


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


# How far a time zone's month may start before (UTC+14) or after (UTC-12) the UTC month.
ZONE_REACH = (timedelta(hours=12), timedelta(hours=14))


def months_to_draft(*, now: datetime) -> list[tuple[int, int]]:
    """The months (year, month) whose drafts the beat refreshes at ``now``: those an
    organization may be in now, in any time zone, the month before each (which may have ended
    since the last pass, however long ago that was), and every month that still has a
    draft; in order."""
    months = {
        (first.year, first.month)
        for first in Invoice.objects.filter(state=Invoice.State.DRAFT, corrects__isnull=True)
        .values_list("month", flat=True)
        .distinct()
    }
    for moment in (now - ZONE_REACH[0], now + ZONE_REACH[1]):
        months.add((moment.year, moment.month))
        before = moment.replace(day=1) - timedelta(days=1)
        months.add((before.year, before.month))
    return sorted(months)
