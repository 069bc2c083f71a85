"""Invoices: a month's records as lines rounded once each, issued with numbers without gaps,
never changed once issued (by the services nor the database), corrected by credit notes, and
taken away as CSV, JSON and PDF."""

import csv
import io
import json
from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.db import DatabaseError, transaction
from django.test import override_settings
from pypdf import PdfReader

from billing import exports, services
from billing.models import CancellationCharge, Invoice, InvoiceLine
from portal import clock
from portal.errors import Conflict, Forbidden
from scheduling import services as scheduling
from tenants.permissions import Caller

from ..factories import ProjectFactory
from .conftest import DAY, MONTH, YEAR, draft, metered, period_over

pytestmark = pytest.mark.django_db


def issued(organization, operator) -> Invoice:
    invoice = draft(organization)
    period_over(invoice)
    return services.invoice_issue(caller=Caller(user=operator), invoice=invoice)


def test_a_draft_has_a_line_per_project_class_and_price_with_its_hours(on_demand, acme, vision):
    metered((vision, {"start": 1, "end": 3}))
    [line] = draft(acme).lines.all()
    assert (line.description, line.hours, line.unit_price, line.amount) == (
        "vision: H100-80GB, on-demand use",
        Decimal("16.0000"),
        Decimal("2.9000"),
        Decimal("46.40"),
    )


def test_a_lines_cost_is_rounded_half_up_to_cents_once(on_demand, acme, vision):
    metered((vision, {"start": 1, "end": 2, "gpu_milli": 250}))  # 0.725
    assert draft(acme).lines.get().amount == Decimal("0.73")


def test_each_project_has_its_own_line(on_demand, acme, vision):
    web = ProjectFactory(organization=acme, slug="web")
    metered((vision, {"start": 1, "end": 2}), (web, {"start": 1, "end": 2, "name": "other"}))
    assert sorted(draft(acme).lines.values_list("project__slug", flat=True)) == ["vision", "web"]


@override_settings(PORTAL_TAX_RATE=Decimal("0.19"))
def test_tax_from_the_settings_is_added_to_the_subtotal(on_demand, acme, vision):
    metered((vision, {"start": 1, "end": 3}))
    invoice = draft(acme)
    assert (invoice.subtotal, invoice.tax, invoice.total) == (
        Decimal("46.40"),
        Decimal("8.82"),
        Decimal("55.22"),
    )


def test_a_draft_is_rebuilt_with_what_was_rated_since(on_demand, acme, vision):
    metered((vision, {"start": 1, "end": 2}))
    first = draft(acme)
    metered((vision, {"start": 5, "end": 6, "name": "later"}))
    again = draft(acme)
    assert (again.pk, again.subtotal) == (first.pk, Decimal("46.40"))


def test_issued_invoices_are_numbered_in_sequence(on_demand, acme, globex, vision, operator):
    metered((vision, {"start": 1, "end": 2}))
    metered((ProjectFactory(organization=globex, slug="lab"), {"start": 1, "end": 2, "name": "g"}))
    numbers = [issued(organization, operator).number for organization in (acme, globex)]
    year = clock.now().year  # numbered by the year of issue
    assert numbers == [f"{year}-000001", f"{year}-000002"]


def test_an_issued_invoice_is_not_rebuilt(on_demand, acme, vision, operator):
    metered((vision, {"start": 1, "end": 2}))
    invoice = issued(acme, operator)
    metered((vision, {"start": 5, "end": 6, "name": "later"}))
    assert (draft(acme).pk, draft(acme).subtotal) == (invoice.pk, Decimal("23.20"))


def test_the_database_refuses_to_change_an_issued_invoices_total(on_demand, acme, vision, operator):
    metered((vision, {"start": 1, "end": 2}))
    invoice = issued(acme, operator)
    with pytest.raises(DatabaseError), transaction.atomic():
        Invoice.objects.filter(pk=invoice.pk).update(total=Decimal(1))


def test_the_database_refuses_a_new_line_on_an_issued_invoice(on_demand, acme, vision, operator):
    metered((vision, {"start": 1, "end": 2}))
    invoice = issued(acme, operator)
    with pytest.raises(DatabaseError), transaction.atomic():
        InvoiceLine.objects.create(invoice=invoice, charge="x", description="x", amount=1)


def test_the_database_refuses_to_delete_an_issued_invoice(on_demand, acme, vision, operator):
    metered((vision, {"start": 1, "end": 2}))
    invoice = issued(acme, operator)
    with pytest.raises(DatabaseError), transaction.atomic():
        Invoice.objects.filter(pk=invoice.pk).delete()


def test_an_issued_invoice_may_still_be_paid(on_demand, acme, vision, operator):
    metered((vision, {"start": 1, "end": 2}))
    paid = services.invoice_mark_paid(caller=Caller(user=operator), invoice=issued(acme, operator))
    assert paid.state == Invoice.State.PAID


def test_issuing_twice_is_a_conflict(on_demand, acme, vision, operator):
    metered((vision, {"start": 1, "end": 2}))
    invoice = issued(acme, operator)
    with pytest.raises(Conflict):
        services.invoice_issue(caller=Caller(user=operator), invoice=invoice)


def test_a_credit_note_corrects_an_issued_invoice_in_the_same_numbering(
    on_demand, acme, vision, operator
):
    metered((vision, {"start": 1, "end": 2}))
    invoice = issued(acme, operator)
    note = services.credit_note_issue(
        caller=Caller(user=operator), invoice=invoice, amount=Decimal("3.20"), reason="Outage"
    )
    assert (note.number, note.corrects_id, note.total) == (
        f"{clock.now().year}-000002",
        invoice.pk,
        Decimal("-3.20"),
    )


def test_a_credit_note_never_credits_more_than_is_left(on_demand, acme, vision, operator):
    metered((vision, {"start": 1, "end": 2}))
    invoice = issued(acme, operator)
    credit = {"caller": Caller(user=operator), "invoice": invoice, "reason": "Outage"}
    services.credit_note_issue(amount=Decimal("20"), **credit)
    with pytest.raises(ValidationError) as refused:
        services.credit_note_issue(amount=Decimal("3.21"), **credit)
    assert refused.value.message_dict["amount"] == ["At most 3.20 is left to credit."]


def test_a_void_invoice_lets_the_month_be_drafted_again(on_demand, acme, vision, operator):
    metered((vision, {"start": 1, "end": 2}))
    invoice = issued(acme, operator)
    services.invoice_void(caller=Caller(user=operator), invoice=invoice, reason="Wrong tax")
    assert draft(acme).pk != invoice.pk


def test_only_an_operator_issues(on_demand, acme, vision, alice):
    metered((vision, {"start": 1, "end": 2}))
    with pytest.raises(Forbidden):
        services.invoice_issue(caller=Caller(user=alice), invoice=draft(acme))


def test_a_cancellation_charge_is_a_line(offer, cluster, acme, alice):
    offer(slug="h100-reserved", kind="reservation", price="2.4650")
    # Within the day before its window, whatever the time of day: cancelling it is charged.
    start = clock.now().replace(minute=0, second=0, microsecond=0) + timedelta(hours=2)
    held = scheduling.reservations_request(
        caller=Caller(user=alice),
        organization=acme,
        request=scheduling.ReservationRequest(
            gpu_class="H100-80GB",
            gpus=8,
            starts_at=start,
            ends_at=start + timedelta(hours=4),
            pool="dgx-h100",
        ),
    )[0]
    scheduling.reservation_cancel(caller=Caller(user=alice), reservation=held)
    services.cancellation_charge_record(reservation_id=str(held.pk))
    charge = CancellationCharge.objects.get()
    invoice = services.invoice_draft(
        organization=acme, year=charge.cancelled_at.year, month=charge.cancelled_at.month
    )
    assert [(line.charge, line.amount) for line in invoice.lines.all()] == [
        ("cancellation", charge.amount)
    ]


# Exports.


def test_the_csv_parses_back_into_the_lines(on_demand, acme, vision):
    metered((vision, {"start": 1, "end": 3}))
    rows = list(csv.DictReader(io.StringIO(exports.invoice_csv(draft(acme)))))
    assert [(r["project"], r["hours"], r["amount"]) for r in rows] == [
        ("vision", "16.0000", "46.40")
    ]


def test_the_json_carries_the_lines_and_the_total(on_demand, acme, vision):
    metered((vision, {"start": 1, "end": 3}))
    data = json.loads(json.dumps(exports.invoice_json(draft(acme))))
    assert (len(data["lines"]), data["total"], data["currency"]) == (1, "46.40", "EUR")


def test_the_pdf_shows_the_organization_the_period_and_the_total(on_demand, acme, vision, operator):
    metered((vision, {"start": 1, "end": 3}))
    invoice = issued(acme, operator)
    text = "".join(
        page.extract_text() for page in PdfReader(io.BytesIO(exports.invoice_pdf(invoice))).pages
    )
    assert (
        "Acme AI" in text,
        f"{invoice.period_start:%Y-%m-%d}" in text,
        "46.40" in text,
        invoice.number in text,
    ) == (True, True, True, True)


def test_the_months_csv_has_every_invoices_lines(on_demand, acme, globex, vision):
    metered((vision, {"start": 1, "end": 2}))
    metered((ProjectFactory(organization=globex, slug="lab"), {"start": 1, "end": 2, "name": "g"}))
    services.invoices_draft_month(year=YEAR, month=MONTH)
    rows = list(csv.DictReader(io.StringIO(exports.month_csv(Invoice.objects.all()))))
    assert sorted(r["organization"] for r in rows) == ["acme", "globex"]


def test_a_quota_packages_months_are_lines_of_the_months_they_start_in(
    offer, cluster, alice, acme, operator
):
    offer(slug="h100-package", kind="quota_package", quantity=8, price="10000")
    start = DAY
    made = services.order_create(
        caller=Caller(user=alice),
        organization=acme,
        request=services.OrderRequest(
            item="h100-package", quantity=1, starts_at=start, ends_at=start + timedelta(days=30)
        ),
    )
    services.order_approve(caller=Caller(user=operator), order=made)
    services.order_fulfil(order_id=str(made.pk))
    invoice = services.invoice_draft(organization=acme, year=start.year, month=start.month)
    assert [(line.charge, line.amount) for line in invoice.lines.all()] == [
        ("quota_package", Decimal("10000.00"))
    ]


def test_a_rebuilt_draft_has_a_later_update_time(half_cents, acme):
    first = draft(acme).updated_at
    clock.advance(seconds=600)
    assert draft(acme).updated_at > first
