"""Credit operators grant an organization (from admin): taken off its invoices' subtotals
before tax as they are issued, spent once, given back by a void invoice, never changed on an
issued one; in the exports, over the API (owners and admins read) and in the console."""

import csv
import io
from decimal import Decimal

import pytest
from django.db import DatabaseError, transaction
from django.test import override_settings
from pypdf import PdfReader

from billing import exports, selectors, services
from billing.models import Credit, Invoice
from portal.errors import Forbidden
from tenants.permissions import Caller

from ..roles import MANAGERS_READ
from .conftest import MONTH, YEAR, draft, metered, period_over, rated

pytestmark = pytest.mark.django_db

URL = "/api/v1/organizations/acme/credits/"


def granted(organization, operator, amount: str) -> Credit:
    return services.credit_grant(
        caller=Caller(user=operator),
        organization=organization,
        amount=Decimal(amount),
        reason="Outage of 2026-11-03",
    )


@pytest.fixture
def used(on_demand, vision):
    """46.40 of use by acme this month."""
    metered((vision, {"start": 1, "end": 3}))


def issue(invoice, operator) -> Invoice:
    period_over(invoice)
    return services.invoice_issue(caller=Caller(user=operator), invoice=invoice)


@override_settings(PORTAL_TAX_RATE=Decimal("0.19"))
def test_credit_is_taken_off_the_subtotal_before_tax(used, acme, operator):
    granted(acme, operator, "10")
    invoice = draft(acme)
    assert (invoice.subtotal, invoice.credits, invoice.tax, invoice.total) == (
        Decimal("46.40"),
        Decimal("10.00"),
        Decimal("6.92"),
        Decimal("43.32"),
    )


def test_credit_beyond_the_invoice_is_left_for_the_next(used, acme, operator):
    granted(acme, operator, "100")
    invoice = issue(draft(acme), operator)
    assert (invoice.credits, invoice.total, selectors.credit_balance(organization=acme)) == (
        Decimal("46.40"),
        Decimal("0.00"),
        Decimal("53.60"),
    )


def test_two_invoices_spend_one_credit_once(used, acme, vision, operator):
    rated(vision, starts_at=draft(acme).period_start.replace(year=YEAR - 1), cost="40")
    earlier = services.invoice_draft(organization=acme, year=YEAR - 1, month=MONTH)
    granted(acme, operator, "50")
    first = issue(earlier, operator)
    second = issue(draft(acme), operator)
    assert (first.credits, second.credits) == (Decimal("40.00"), Decimal("10.00"))


def test_a_void_invoice_gives_its_credit_back(used, acme, operator):
    granted(acme, operator, "30")
    invoice = issue(draft(acme), operator)
    services.invoice_void(caller=Caller(user=operator), invoice=invoice, reason="wrong price")
    assert selectors.credit_balance(organization=acme) == Decimal("30.00")


def test_the_database_refuses_to_change_an_issued_invoices_credits(used, acme, operator):
    granted(acme, operator, "30")
    invoice = issue(draft(acme), operator)
    with pytest.raises(DatabaseError), transaction.atomic():
        Invoice.objects.filter(pk=invoice.pk).update(credits=Decimal(0))


def test_a_credit_note_credits_at_most_what_was_charged_after_credit(used, acme, operator):
    granted(acme, operator, "40")
    invoice = issue(draft(acme), operator)
    with pytest.raises(Exception, match=r"At most 6\.40"):
        services.credit_note_issue(
            caller=Caller(user=operator), invoice=invoice, amount=Decimal("7"), reason="refund"
        )


def test_only_an_operator_grants_credit(acme, alice):
    with pytest.raises(Forbidden):
        granted(acme, alice, "10")


def test_the_csv_shows_the_credit_as_a_negative_row(used, acme, operator):
    granted(acme, operator, "10")
    rows = list(csv.DictReader(io.StringIO(exports.invoice_csv(draft(acme)))))
    assert (rows[-1]["description"], rows[-1]["amount"]) == ("Credit applied", "-10.00")


def test_the_pdf_shows_the_credit(used, acme, operator):
    granted(acme, operator, "10")
    text = PdfReader(io.BytesIO(exports.invoice_pdf(draft(acme)))).pages[0].extract_text()
    assert "Credits" in text and "-10.00" in text


@pytest.mark.parametrize(
    ("caller", "status"),
    MANAGERS_READ,
)
def test_owners_and_admins_read_the_credit_and_nobody_else(acme, actors, api_as, caller, status):
    assert api_as(actors.get(caller)).get(URL).status_code == status


def test_the_api_answers_the_grants_and_the_balance(used, acme, operator, alice, api_as):
    granted(acme, operator, "100")
    issue(draft(acme), operator)
    body = api_as(alice).get(URL).json()
    assert (body["balance"], [g["amount"] for g in body["grants"]]) == ("53.60", ["100.00"])


def test_the_console_shows_the_credit_left(used, acme, operator, alice, client):
    granted(acme, operator, "12.50")
    client.force_login(alice)
    page = client.get("/orgs/acme/invoices/").content.decode()
    assert "Credit left: <strong>12.50" in page


def test_an_operator_grants_credit_from_admin(acme, operator, client):
    operator.is_superuser = True
    operator.save()
    client.force_login(operator)
    response = client.post(
        "/admin/billing/credit/add/",
        {"organization": acme.pk, "amount": "15.00", "reason": "Promotion"},
    )
    credit = Credit.objects.get()
    assert (response.status_code, credit.amount, credit.granted_by) == (
        302,
        Decimal("15.00"),
        operator,
    )
