"""Invoices issued: a draft (``drafting``) issued once its period has ended, with what was
rated up to the issue, and a number without gaps per year; never changed once issued (the
database refuses too), corrected by credit notes; paid or voided; credit granted.
"""

from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Sum

from portal import clock
from portal.errors import Conflict
from portal.events import Event, publish
from scheduling.models import Reservation
from tenants.models import Organization
from tenants.permissions import Caller, require_operator
from tenants.services import audit_record

from .. import selectors
from ..models import (
    BillingRecord,
    CancellationCharge,
    Credit,
    Invoice,
    InvoiceCounter,
    InvoiceLine,
)
from ..pricing import to_cents
from .commerce import cancellation_charge_record
from .drafting import lines_rebuilt, totals_set, usage_groups
from .rating import usage_meter


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
            usage = usage_groups(
                Organization.objects.filter(pk=organization.pk),
                locked.period_start,
                locked.period_end,
            )
            lines_rebuilt(
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
        publish(Event.INVOICE_ISSUED, invoice_id=str(locked.pk))
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
        totals_set(note, [line], tax_rate=original.tax_rate, credit=Decimal(0))
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
