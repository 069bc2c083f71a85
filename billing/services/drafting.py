"""Invoice drafts: an organization's month (its invoice period, ``selectors.invoice_period``) of
billing records, cancellation charges, quota packages and the preemption contract's credits
(negative lines), as lines per project, class (or MIG
profile), charge type and unit price, each rounded half up to cents once, with the credit it
has left; built again as more is rated, until the invoice is issued (``invoicing``).
"""

from datetime import date, datetime
from decimal import Decimal

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Sum

from portal import clock
from scheduling.models import GpuClass
from tenants.models import Organization, Project, zone_named

from .. import selectors
from ..models import (
    BillingRecord,
    CancellationCharge,
    CatalogItem,
    Invoice,
    InvoiceLine,
    Order,
)
from ..pricing import billed_hours, month_bounds, to_cents

HOURS = Decimal("0.0001")
# What an invoice line of use no price was in force for says: never issued at zero.
UNPRICED = "NO PRICE IN FORCE: held until priced"


def invoice_draft(*, organization: Organization, year: int, month: int) -> Invoice:
    """Build (or rebuild) the organization's draft for the month (its invoice period) from
    what is rated; an issued invoice for it is returned as it is."""
    start, end = selectors.invoice_period(organization=organization, year=year, month=month)
    usage = usage_groups(Organization.objects.filter(pk=organization.pk), start, end)
    return _draft_saved(
        organization, date(year, month, 1), start, end, usage.get(organization.pk, [])
    )


def _draft_saved(
    organization: Organization, month: date, start: datetime, end: datetime, usage: list[dict]
) -> Invoice:
    try:
        with transaction.atomic():
            return _draft(organization, month, start, end, usage)
    except IntegrityError:  # another run made the draft meanwhile: rebuild that one
        with transaction.atomic():
            return _draft(organization, month, start, end, usage)


def _draft(
    organization: Organization, month: date, start: datetime, end: datetime, usage: list[dict]
) -> Invoice:
    invoice = (
        Invoice.objects.select_for_update()
        .filter(organization=organization, month=month, corrects__isnull=True)
        .exclude(state=Invoice.State.VOID)
        .first()
    )
    if invoice is not None and invoice.state != Invoice.State.DRAFT:
        return invoice
    if invoice is None:
        invoice = Invoice.objects.create(
            organization=organization,
            month=month,
            period_start=start,
            period_end=end,
            currency=settings.PORTAL_CURRENCY,
        )
    elif (invoice.period_start, invoice.period_end) != (start, end):
        # Its period is kept: what was rated over it is read again.
        usage = usage_groups(
            Organization.objects.filter(pk=organization.pk),
            invoice.period_start,
            invoice.period_end,
        ).get(organization.pk, [])
    lines_rebuilt(invoice, usage, credit=selectors.credit_balance(organization=organization))
    invoice.save()
    return invoice


def lines_rebuilt(invoice: Invoice, usage: list[dict], *, credit: Decimal) -> None:
    """The draft's lines built again from ``usage`` (its period's record groups), its
    cancellation charges and its packages' months; its totals with ``credit``."""
    invoice.lines.all().delete()
    lines = (
        _usage_lines(invoice, usage)
        + _cancellation_lines(invoice)
        + _package_lines(invoice)
        + _contract_credit_lines(invoice)
    )
    InvoiceLine.objects.bulk_create(lines)
    totals_set(invoice, lines, tax_rate=settings.PORTAL_TAX_RATE, credit=credit)
    invoice.updated_at = clock.now()


LINE_KEY = selectors.LINE_KEY


def usage_groups(organizations, start: datetime, end: datetime) -> dict[object, list[dict]]:
    """Per organization of ``organizations``, its records of [start, end) summed per line
    (project, class, profile, resource, charge and unit price), in one query for all."""
    groups: dict[object, list[dict]] = {}
    rows = (
        BillingRecord.objects.filter(
            organization__in=organizations, starts_at__gte=start, starts_at__lt=end
        )
        .values("organization", *LINE_KEY)
        .annotate(seconds=Sum("quantity_seconds"), cost=Sum("cost"))
        .order_by("organization", *LINE_KEY)
    )
    for row in rows:
        groups.setdefault(row.pop("organization"), []).append(row)
    return groups


def _usage_lines(invoice: Invoice, groups: list[dict]) -> list[InvoiceLine]:
    """One line per project, class, profile, resource, charge and unit price: the records'
    hours and cost summed in the database, the cost rounded once."""
    projects = Project.objects.in_bulk({g["project"] for g in groups})
    classes = GpuClass.objects.in_bulk({g["gpu_class"] for g in groups})
    lines = []
    for group in groups:
        hours = billed_hours(group["seconds"], group["resource"])
        what = classes[group["gpu_class"]].name + (
            f" {group['mig_profile']} instances" if group["mig_profile"] else ""
        )
        if group["resource"] == "shared":
            what += " shares"
        project = projects.get(group["project"])
        charge = BillingRecord.Charge(group["charge"]).label.lower()
        if group["unit_price"] is None:
            # Held: the invoice may not be issued until it is priced (``invoice_issue``).
            charge += f", {UNPRICED}"
        lines.append(
            InvoiceLine(
                invoice=invoice,
                project=project,
                gpu_class=classes[group["gpu_class"]],
                mig_profile=group["mig_profile"],
                resource=group["resource"],
                charge=group["charge"],
                description=f"{project.slug if project else 'organization'}: {what}, {charge}",
                hours=hours.quantize(HOURS),
                unit_price=group["unit_price"],
                amount=to_cents(group["cost"] or Decimal(0)),
            )
        )
    return lines


def _cancellation_lines(invoice: Invoice) -> list[InvoiceLine]:
    charges = CancellationCharge.objects.filter(
        organization=invoice.organization_id,
        cancelled_at__gte=invoice.period_start,
        cancelled_at__lt=invoice.period_end,
        amount__gt=0,
    ).select_related("reservation__gpu_class", "reservation__pool")
    return [
        InvoiceLine(
            invoice=invoice,
            gpu_class=charge.reservation.gpu_class,
            mig_profile=charge.reservation.mig_profile,
            charge="cancellation",
            description=(
                f"Cancelled reservation of {charge.reservation.gpus}"
                f" {charge.reservation.gpu_class.name} {charge.reservation.unit} in"
                f" {charge.reservation.pool.name}, {charge.reservation.starts_at:%Y-%m-%d %H:%M}"
                f" UTC: {charge.percent}% of {charge.remaining_value}"
            ),
            amount=charge.amount,
        )
        for charge in charges
    ]


def _package_lines(invoice: Invoice) -> list[InvoiceLine]:
    charges = selectors.package_charges(
        organization_id=invoice.organization_id,
        starts_at=invoice.period_start,
        ends_at=invoice.period_end,
    )
    return [
        InvoiceLine(
            invoice=invoice,
            project=charge.order.project,
            gpu_class=charge.order.item.gpu_class,
            mig_profile=charge.order.item.mig_profile,
            charge="quota_package",
            description=(
                f"{charge.order.quantity} x {charge.order.item.name}, the month from"
                f" {charge.starts_at:%Y-%m-%d} (order {charge.order.pk})"
            ),
            unit_price=charge.order.unit_price,
            amount=charge.amount,
        )
        for charge in charges
    ]


def _contract_credit_lines(invoice: Invoice) -> list[InvoiceLine]:
    """The preemption contract's credits of the period, each a negative line."""
    return [
        InvoiceLine(
            invoice=invoice,
            project=line.project,
            gpu_class=line.gpu_class,
            mig_profile=line.mig_profile,
            resource=line.resource,
            charge=line.kind,
            description=line.description,
            hours=line.hours,
            unit_price=line.unit_price,
            amount=-line.amount,
        )
        for line in selectors.contract_credit_lines(
            organization_id=invoice.organization_id,
            starts_at=invoice.period_start,
            ends_at=invoice.period_end,
        )
    ]


def totals_set(
    invoice: Invoice, lines: list[InvoiceLine], *, tax_rate: Decimal, credit: Decimal
) -> None:
    """Subtotal of the lines, less as much of ``credit`` (the organization's unspent credit)
    as it covers, plus tax on what is left."""
    invoice.tax_rate = tax_rate
    invoice.subtotal = sum((line.amount for line in lines), Decimal(0))
    invoice.credits = max(min(credit, invoice.subtotal), Decimal(0))
    taxed = invoice.subtotal - invoice.credits
    invoice.tax = to_cents(taxed * invoice.tax_rate)
    invoice.total = taxed + invoice.tax


def invoices_draft_month(*, year: int, month: int) -> int:
    """Draft (or refresh the drafts of) every organization billed in the month, each over its
    invoice period; the usage of all organizations of a zone whose period is the month in it
    is summed in one query, the others' one by one."""
    drafted = 0
    first = date(year, month, 1)
    for zone in Organization.objects.values_list("time_zone", flat=True).order_by().distinct():
        start, end = month_bounds(year, month, zone_named(zone))
        in_zone = Organization.objects.filter(time_zone=zone)
        others = selectors.invoice_periods(
            organizations=in_zone, year=year, month=month, zone=zone_named(zone)
        )
        for organization in in_zone.filter(pk__in=others):
            other_start, other_end = others[organization.pk]
            if _billed(Organization.objects.filter(pk=organization.pk), other_start, other_end):
                invoice_draft(organization=organization, year=year, month=month)
                drafted += 1
        organizations = in_zone.exclude(pk__in=others)
        usage = usage_groups(organizations, start, end)
        billed = (
            set(usage)
            | set(
                CancellationCharge.objects.filter(
                    organization__in=organizations, cancelled_at__gte=start, cancelled_at__lt=end
                ).values_list("organization", flat=True)
            )
            | set(
                Order.objects.filter(
                    organization__in=organizations,
                    state=Order.State.FULFILLED,
                    item__kind=CatalogItem.Kind.QUOTA_PACKAGE,
                    starts_at__lt=end,
                    ends_at__gt=start,
                ).values_list("organization", flat=True)
            )
        )
        for organization in organizations.filter(pk__in=billed):
            _draft_saved(organization, first, start, end, usage.get(organization.pk, []))
        drafted += len(billed)
    return drafted


def invoices_draft_recent(*, now: datetime | None = None) -> int:
    """The beat's pass: refresh the drafts of the months ``selectors.months_to_draft`` names
    now."""
    months = selectors.months_to_draft(now=now or clock.now())
    return sum(invoices_draft_month(year=y, month=m) for y, m in months)


def _billed(organizations, start: datetime, end: datetime) -> bool:
    """Whether any of ``organizations`` has anything to invoice over [start, end)."""
    return (
        BillingRecord.objects.filter(
            organization__in=organizations, starts_at__gte=start, starts_at__lt=end
        ).exists()
        or CancellationCharge.objects.filter(
            organization__in=organizations, cancelled_at__gte=start, cancelled_at__lt=end
        ).exists()
        or Order.objects.filter(
            organization__in=organizations,
            state=Order.State.FULFILLED,
            item__kind=CatalogItem.Kind.QUOTA_PACKAGE,
            starts_at__lt=end,
            ends_at__gt=start,
        ).exists()
    )
