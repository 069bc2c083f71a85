"""Credit operators grant an organization: taken off its invoices' subtotals before tax as
they are issued, spent once, given back by a void invoice, never changed on an issued one, and
shown in the exports."""

import csv
import io
from decimal import Decimal

import pytest
from django.db import DatabaseError, transaction
from django.test import override_settings
from pypdf import PdfReader

from billing import exports, selectors, services
from billing.models import Invoice
from portal.errors import Forbidden
from tenants.permissions import Caller

from .conftest import MONTH, YEAR, draft, granted, issue, rated

pytestmark = pytest.mark.django_db

URL = "/api/v1/organizations/acme/credits/"


@override_settings(PORTAL_TAX_RATE=Decimal("0.19"))
def test_credit_is_taken_off_the_subtotal_before_tax(used_this_month, acme, operator):
    granted(acme, operator, "10")
    invoice = draft(acme)
    assert (invoice.subtotal, invoice.credits, invoice.tax, invoice.total) == (
        Decimal("46.40"),
        Decimal("10.00"),
        Decimal("6.92"),
        Decimal("43.32"),
    )


def test_credit_beyond_the_invoice_is_left_for_the_next(used_this_month, acme, operator):
    granted(acme, operator, "100")
    invoice = issue(draft(acme), operator)
    assert (invoice.credits, invoice.total, selectors.credit_balance(organization=acme)) == (
        Decimal("46.40"),
        Decimal("0.00"),
        Decimal("53.60"),
    )


def test_two_invoices_spend_one_credit_once(used_this_month, acme, vision, operator):
    rated(vision, starts_at=draft(acme).period_start.replace(year=YEAR - 1), cost="40")
    earlier = services.invoice_draft(organization=acme, year=YEAR - 1, month=MONTH)
    granted(acme, operator, "50")
    first = issue(earlier, operator)
    second = issue(draft(acme), operator)
    assert (first.credits, second.credits) == (Decimal("40.00"), Decimal("10.00"))


def test_a_void_invoice_gives_its_credit_back(used_this_month, acme, operator):
    granted(acme, operator, "30")
    invoice = issue(draft(acme), operator)
    services.invoice_void(caller=Caller(user=operator), invoice=invoice, reason="wrong price")
    assert selectors.credit_balance(organization=acme) == Decimal("30.00")


def test_the_database_refuses_to_change_an_issued_invoices_credits(used_this_month, acme, operator):
    granted(acme, operator, "30")
    invoice = issue(draft(acme), operator)
    with pytest.raises(DatabaseError), transaction.atomic():
        Invoice.objects.filter(pk=invoice.pk).update(credits=Decimal(0))


def test_a_credit_note_credits_at_most_what_was_charged_after_credit(
    used_this_month, acme, operator
):
    granted(acme, operator, "40")
    invoice = issue(draft(acme), operator)
    with pytest.raises(Exception, match=r"At most 6\.40"):
        services.credit_note_issue(
            caller=Caller(user=operator), invoice=invoice, amount=Decimal("7"), reason="refund"
        )


def test_only_an_operator_grants_credit(acme, alice):
    with pytest.raises(Forbidden):
        granted(acme, alice, "10")


def test_the_csv_shows_the_credit_as_a_negative_row(used_this_month, acme, operator):
    granted(acme, operator, "10")
    rows = list(csv.DictReader(io.StringIO(exports.invoice_csv(draft(acme)))))
    assert (rows[-1]["description"], rows[-1]["amount"]) == ("Credit applied", "-10.00")


def test_the_pdf_shows_the_credit(used_this_month, acme, operator):
    granted(acme, operator, "10")
    text = PdfReader(io.BytesIO(exports.invoice_pdf(draft(acme)))).pages[0].extract_text()
    assert "Credits" in text and "-10.00" in text
