"""Invoices: an organization's month (its invoice period, ``selectors.invoice_period``) of
billing records and cancellation charges, as lines per project, class (or MIG profile), charge
type and unit price, each rounded half up to cents once; issued once the period has ended,
with what was rated up to the issue, and a number without gaps per year; never changed once
issued (the database refuses too), corrected by credit notes.
"""

from datetime import date, datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Sum

from portal import clock
from portal.errors import Conflict
from scheduling.models import GpuClass, Reservation
from tenants.models import Organization, Project, zone_named
from tenants.permissions import Caller, require_operator
from tenants.services import audit_record

from .. import selectors
from ..models import (
    BillingRecord,
    CancellationCharge,
    CatalogItem,
    Credit,
    Invoice,
    InvoiceCounter,
    InvoiceLine,
    Order,
)
from ..pricing import billed_hours, month_bounds, to_cents
from .commerce import cancellation_charge_record
from .metering import usage_meter

HOURS = Decimal("0.0001")
# What an invoice line of use no price was in force for says: never issued at zero.
UNPRICED = "NO PRICE IN FORCE: held until priced"


def invoice_draft(*, organization: Organization, year: int, month: int) -> Invoice:
    """Build (or rebuild) the organization's draft for the month (its invoice period) from
    what is rated; an issued invoice for it is returned as it is."""
    start, end = selectors.invoice_period(organization=organization, year=year, month=month)
    usage = _usage_groups(Organization.objects.filter(pk=organization.pk), start, end)
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
        usage = _usage_groups(
            Organization.objects.filter(pk=organization.pk),
            invoice.period_start,
            invoice.period_end,
        ).get(organization.pk, [])
    _lines_rebuilt(invoice, usage, credit=selectors.credit_balance(organization=organization))
    invoice.save()
    return invoice


def _lines_rebuilt(invoice: Invoice, usage: list[dict], *, credit: Decimal) -> None:
    """The draft's lines built again from ``usage`` (its period's record groups), its
    cancellation charges and its packages' months; its totals with ``credit``."""
    invoice.lines.all().delete()
    lines = _usage_lines(invoice, usage) + _cancellation_lines(invoice) + _package_lines(invoice)
    InvoiceLine.objects.bulk_create(lines)
    _total(invoice, lines, tax_rate=settings.PORTAL_TAX_RATE, credit=credit)
    invoice.updated_at = clock.now()


LINE_KEY = selectors.LINE_KEY


def _usage_groups(organizations, start: datetime, end: datetime) -> dict[object, list[dict]]:
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


def _total(
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


def _locked(invoice: Invoice, *states: str) -> Invoice:
    locked = Invoice.objects.select_for_update().get(pk=invoice.pk)
    if locked.state not in states:
        raise Conflict(f"The invoice is {locked.state}.", code="invoice_state")
    return locked


def _number(year: int) -> str:
    """The year's next number: its counter row locked until the transaction ends, so two
    invoices issued at once get consecutive numbers and a rolled-back one leaves no gap."""
    InvoiceCounter.objects.bulk_create([InvoiceCounter(year=year)], ignore_conflicts=True)
    counter = InvoiceCounter.objects.select_for_update().get(year=year)
    counter.last += 1
    counter.save(update_fields=["last"])
    return f"{year}-{counter.last:06d}"


def invoice_issue(*, caller: Caller, invoice: Invoice) -> Invoice:
    """Finance issues a draft once its period has ended (a Conflict before: the rest of the
    month would be on no invoice), with everything placed up to now rated first and its lines
    built again from that, and the credit the organization has left now: numbered, and from
    then on never changed."""
    require_operator(caller)
    if not invoice.is_credit_note:
        _period_ended(invoice)
        # What ran up to now is rated and recorded first: none of the period is left off.
        usage_meter()
        _cancellations_recorded(invoice)
    with transaction.atomic():
        locked = _locked(invoice, Invoice.State.DRAFT)
        _refuse_unpriced(locked)
        if not locked.is_credit_note:
            # Its organization locked: two invoices issued at once never spend one credit.
            organization = Organization.objects.select_for_update().get(pk=locked.organization_id)
            usage = _usage_groups(
                Organization.objects.filter(pk=organization.pk),
                locked.period_start,
                locked.period_end,
            )
            _lines_rebuilt(
                locked,
                usage.get(organization.pk, []),
                credit=selectors.credit_balance(organization=organization),
            )
        now = clock.now()
        locked.number = _number(now.year)
        locked.state = Invoice.State.ISSUED
        locked.issued_at = now
        locked.save(
            update_fields=[
                "number",
                "state",
                "issued_at",
                "subtotal",
                "credits",
                "tax_rate",
                "tax",
                "total",
                "updated_at",
            ]
        )
        _audited(caller, locked, "invoice.issue")
    return locked


def _refuse_unpriced(invoice: Invoice) -> None:
    """An invoice is never issued with use of its period that no price was in force for
    (billed at nothing): finance prices it first (``usage_unpriced_price``), which makes the
    draft again."""
    if invoice.is_credit_note:
        return
    unpriced = selectors.usage_unpriced(
        records=BillingRecord.objects.filter(
            organization=invoice.organization_id,
            starts_at__gte=invoice.period_start,
            starts_at__lt=invoice.period_end,
        )
    )
    if unpriced:
        raise Conflict(
            f"Invoice {invoice} is held: no price was in force for "
            + "; ".join(str(use) for use in unpriced)
            + ". Add a price to the catalog, then price the unpriced use (admin: Billing"
            " records, No price in force), which drafts the month again, before issuing.",
            code="unpriced_usage",
        )


def _period_ended(invoice: Invoice) -> None:
    now = clock.now()
    if now < invoice.period_end:
        zone = invoice.organization.zone
        raise Conflict(
            f"The invoice for {invoice.month:%Y-%m} covers a period that has not ended: it"
            f" ends {invoice.period_end.astimezone(zone):%Y-%m-%d %H:%M}"
            f" ({invoice.organization.time_zone or 'UTC'}). Issue it after then, so that the"
            " rest of the month is on it.",
            code="period_not_ended",
        )


def _cancellations_recorded(invoice: Invoice) -> None:
    """Record the charges of the organization's reservations cancelled in the period that
    have none yet (the worker's job, done now so that none is left off)."""
    uncharged = (
        Reservation.objects.filter(
            organization=invoice.organization_id,
            state=Reservation.State.CANCELLED,
            cancelled_at__lt=invoice.period_end,
        )
        .exclude(pk__in=CancellationCharge.objects.values("reservation_id"))
        .values_list("pk", flat=True)
    )
    for pk in uncharged:
        cancellation_charge_record(reservation_id=pk)


def invoice_mark_paid(*, caller: Caller, invoice: Invoice) -> Invoice:
    require_operator(caller)
    with transaction.atomic():
        locked = _locked(invoice, Invoice.State.ISSUED)
        locked.state = Invoice.State.PAID
        locked.paid_at = clock.now()
        locked.save(update_fields=["state", "paid_at"])
        _audited(caller, locked, "invoice.paid")
    return locked


def invoice_void(*, caller: Caller, invoice: Invoice, reason: str) -> Invoice:
    """Finance voids an issued, unpaid invoice (its number stays used); the month may then be
    drafted again."""
    require_operator(caller)
    if not reason.strip():
        raise ValidationError({"reason": ["Say why the invoice is void."]})
    with transaction.atomic():
        locked = _locked(invoice, Invoice.State.ISSUED)
        locked.state = Invoice.State.VOID
        locked.voided_at = clock.now()
        locked.reason = reason.strip()[:500]
        locked.save(update_fields=["state", "voided_at", "reason"])
        _audited(caller, locked, "invoice.void")
    return locked


def credit_note_issue(*, caller: Caller, invoice: Invoice, amount: Decimal, reason: str) -> Invoice:
    """Correct an issued (or paid) invoice: a credit note of ``amount`` before tax, issued in
    the same numbering, never more than what the invoice and its earlier notes leave."""
    require_operator(caller)
    errors: dict[str, list[str]] = {}
    if not reason.strip():
        errors["reason"] = ["Say what the credit note corrects."]
    if amount <= 0:
        errors["amount"] = ["A credit note credits a positive amount."]
    if errors:
        raise ValidationError(errors)
    with transaction.atomic():
        original = _locked(invoice, Invoice.State.ISSUED, Invoice.State.PAID)
        credited = -(original.credit_notes.aggregate(total=Sum("subtotal"))["total"] or Decimal(0))
        left = original.subtotal - original.credits - credited
        if amount > left:
            raise ValidationError({"amount": [f"At most {left} is left to credit."]})
        note = Invoice.objects.create(
            organization=original.organization,
            month=original.month,
            period_start=original.period_start,
            period_end=original.period_end,
            corrects=original,
            currency=original.currency,
            reason=reason.strip()[:500],
        )
        line = InvoiceLine(
            invoice=note,
            charge="credit",
            description=f"Credit on invoice {original.number}: {reason.strip()}"[:300],
            amount=-to_cents(amount),
        )
        line.save()
        _total(note, [line], tax_rate=original.tax_rate, credit=Decimal(0))
        note.save()
    return invoice_issue(caller=caller, invoice=note)


def _audited(caller: Caller, invoice: Invoice, action: str) -> None:
    audit_record(
        caller=caller,
        organization=invoice.organization,
        action=action,
        target=invoice,
        payload={"number": invoice.number, "total": str(invoice.total), "state": invoice.state},
    )


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
        usage = _usage_groups(organizations, start, end)
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


# How far a time zone's month may start before (UTC+14) or after (UTC-12) the UTC month.
ZONE_REACH = (timedelta(hours=12), timedelta(hours=14))


def invoices_draft_recent(*, now: datetime | None = None) -> int:
    """The beat's pass: refresh the drafts of the months an organization may be in now, in
    any time zone, of the month before each (which may have ended since the last pass, however
    long ago that was), and of every month that still has a draft."""
    now = now or clock.now()
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
    return sum(invoices_draft_month(year=y, month=m) for y, m in sorted(months))


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


def credit_grant(
    *, caller: Caller, organization: Organization, amount: Decimal, reason: str
) -> Credit:
    """An operator grants the organization credit; its next invoices take it off their
    subtotals as they are issued."""
    require_operator(caller)
    credit = Credit(
        organization=organization,
        amount=amount,
        reason=reason.strip(),
        granted_by=caller.user,
        granted_at=clock.now(),
    )
    credit.full_clean()
    with transaction.atomic():
        credit.save()
        audit_record(
            caller=caller,
            organization=organization,
            action="credit.grant",
            target=credit,
            payload={"amount": str(credit.amount), "reason": credit.reason},
        )
    return credit
