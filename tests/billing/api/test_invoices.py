"""The invoices API: owners and admins only, another tenant's a 404, the lines traced back
to the usage behind them, the exports as files, and the month's export for finance."""

import csv
import io

import pytest
from pypdf import PdfReader

from portal import clock

from ...roles import MANAGERS_READ
from ..conftest import MONTH, YEAR, draft

pytestmark = pytest.mark.django_db

LIST = "/api/v1/organizations/acme/invoices/"


@pytest.mark.parametrize(
    ("caller", "status"),
    MANAGERS_READ,
)
def test_owners_and_admins_read_the_invoices_and_nobody_else(
    two_line_invoice, actors, api_as, caller, status
):
    assert api_as(actors.get(caller)).get(LIST).status_code == status


def test_an_invoice_answers_its_lines_and_total(two_line_invoice, alice, api_as):
    got = api_as(alice).get(f"{LIST}{two_line_invoice.pk}/").json()
    assert (got["total"], [line["hours"] for line in got["lines"]]) == ("69.60", ["24.0000"])


def test_another_tenants_invoice_is_a_404(two_line_invoice, bruno, api_as):
    url = f"/api/v1/organizations/globex/invoices/{two_line_invoice.pk}/"
    assert api_as(bruno).get(url).status_code == 404


@pytest.mark.parametrize("invoice_id", ["not-a-uuid", "00000000-0000-0000-0000-000000000000"])
def test_an_unknown_or_malformed_invoice_is_a_404(two_line_invoice, alice, api_as, invoice_id):
    assert api_as(alice).get(f"{LIST}{invoice_id}/").status_code == 404


def test_a_line_lists_the_usage_behind_it_with_the_seconds_it_bills(
    two_line_invoice, alice, api_as
):
    line = two_line_invoice.lines.get()
    usage = (
        api_as(alice).get(f"{LIST}{two_line_invoice.pk}/lines/{line.pk}/usage/").json()["results"]
    )
    assert [(u["workload"], u["billed_seconds"]) for u in usage] == [
        ("w", "57600.000000"),
        ("second", "28800.000000"),
    ]


def test_an_unknown_line_is_a_404(two_line_invoice, alice, api_as):
    assert api_as(alice).get(f"{LIST}{two_line_invoice.pk}/lines/999999/usage/").status_code == 404


def test_the_csv_export_parses_back(two_line_invoice, alice, api_as):
    response = api_as(alice).get(f"{LIST}{two_line_invoice.pk}/export/csv/")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert (response["Content-Type"], [r["amount"] for r in rows]) == ("text/csv", ["69.60"])


def test_the_pdf_export_is_a_pdf_with_the_total(two_line_invoice, alice, api_as):
    response = api_as(alice).get(f"{LIST}{two_line_invoice.pk}/export/pdf/")
    text = PdfReader(io.BytesIO(response.content)).pages[0].extract_text()
    assert (response["Content-Type"], "69.60" in text) == ("application/pdf", True)


def test_an_unknown_export_is_a_404(two_line_invoice, alice, api_as):
    assert api_as(alice).get(f"{LIST}{two_line_invoice.pk}/export/xlsx/").status_code == 404


def test_finance_exports_a_month_and_tenants_may_not(two_line_invoice, operator, alice, api_as):
    url = f"/api/v1/invoices/{YEAR}/{MONTH}/export/csv/"
    rows = list(csv.DictReader(io.StringIO(api_as(operator).get(url).content.decode())))
    assert ([r["organization"] for r in rows], api_as(alice).get(url).status_code) == (
        ["acme"],
        403,
    )


def test_the_draft_answers_when_it_was_last_updated(half_cents, acme, alice, api_as):
    invoice = draft(acme)
    got = api_as(alice).get(f"/api/v1/organizations/acme/invoices/{invoice.pk}/").json()
    assert got["updated_at"].startswith(f"{clock.now():%Y-%m-%dT%H:%M}")
