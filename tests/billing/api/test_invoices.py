"""Invoices over the API and in the console: owners and admins only, another tenant's a 404,
the lines traced back to the usage behind them, and the exports as files."""

import csv
import io
from datetime import UTC

import pytest
from django.urls import reverse
from pypdf import PdfReader

from billing import tasks
from billing.models import Invoice
from portal import clock

from ...roles import MANAGERS_READ
from ..conftest import MONTH, YEAR, draft, metered, period_over

pytestmark = pytest.mark.django_db

LIST = "/api/v1/organizations/acme/invoices/"


@pytest.fixture
def invoice(on_demand, acme, vision):
    metered((vision, {"start": 1, "end": 3}), (vision, {"start": 4, "end": 5, "name": "second"}))
    return draft(acme)


@pytest.mark.parametrize(
    ("caller", "status"),
    MANAGERS_READ,
)
def test_owners_and_admins_read_the_invoices_and_nobody_else(
    invoice, actors, api_as, caller, status
):
    assert api_as(actors.get(caller)).get(LIST).status_code == status


def test_an_invoice_answers_its_lines_and_total(invoice, alice, api_as):
    got = api_as(alice).get(f"{LIST}{invoice.pk}/").json()
    assert (got["total"], [line["hours"] for line in got["lines"]]) == ("69.60", ["24.0000"])


def test_another_tenants_invoice_is_a_404(invoice, bruno, api_as):
    url = f"/api/v1/organizations/globex/invoices/{invoice.pk}/"
    assert api_as(bruno).get(url).status_code == 404


@pytest.mark.parametrize("invoice_id", ["not-a-uuid", "00000000-0000-0000-0000-000000000000"])
def test_an_unknown_or_malformed_invoice_is_a_404(invoice, alice, api_as, invoice_id):
    assert api_as(alice).get(f"{LIST}{invoice_id}/").status_code == 404


def test_a_line_lists_the_usage_behind_it_with_the_seconds_it_bills(invoice, alice, api_as):
    line = invoice.lines.get()
    usage = api_as(alice).get(f"{LIST}{invoice.pk}/lines/{line.pk}/usage/").json()["results"]
    assert [(u["workload"], u["billed_seconds"]) for u in usage] == [
        ("w", "57600.000000"),
        ("second", "28800.000000"),
    ]


def test_an_unknown_line_is_a_404(invoice, alice, api_as):
    assert api_as(alice).get(f"{LIST}{invoice.pk}/lines/999999/usage/").status_code == 404


def test_the_csv_export_parses_back(invoice, alice, api_as):
    response = api_as(alice).get(f"{LIST}{invoice.pk}/export/csv/")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert (response["Content-Type"], [r["amount"] for r in rows]) == ("text/csv", ["69.60"])


def test_the_pdf_export_is_a_pdf_with_the_total(invoice, alice, api_as):
    response = api_as(alice).get(f"{LIST}{invoice.pk}/export/pdf/")
    text = PdfReader(io.BytesIO(response.content)).pages[0].extract_text()
    assert (response["Content-Type"], "69.60" in text) == ("application/pdf", True)


def test_an_unknown_export_is_a_404(invoice, alice, api_as):
    assert api_as(alice).get(f"{LIST}{invoice.pk}/export/xlsx/").status_code == 404


def test_finance_exports_a_month_and_tenants_may_not(invoice, operator, alice, api_as):
    url = f"/api/v1/invoices/{YEAR}/{MONTH}/export/csv/"
    rows = list(csv.DictReader(io.StringIO(api_as(operator).get(url).content.decode())))
    assert ([r["organization"] for r in rows], api_as(alice).get(url).status_code) == (
        ["acme"],
        403,
    )


def test_the_console_lists_the_invoices_with_their_downloads(invoice, alice, client):
    client.force_login(alice)
    page = client.get(reverse("billing:invoices", args=["acme"])).content.decode()
    download = reverse("billing:invoice-download", args=["acme", invoice.pk, "pdf"])
    assert ("69.60" in page, download in page) == (True, True)


def test_a_member_gets_no_invoices_page(invoice, mia, client):
    client.force_login(mia)
    assert client.get(reverse("billing:invoices", args=["acme"])).status_code == 403


def test_the_beat_task_drafts_this_month(on_demand, acme, vision):
    now = clock.now().astimezone(UTC)
    metered((vision, {"start": -20, "end": -19}))  # today, before now
    tasks.invoices_draft()
    assert Invoice.objects.filter(period_start__month=now.month).count() == 1


def test_an_operator_issues_from_admin(invoice, finance):
    period_over(invoice)
    finance.post(
        reverse("admin:billing_invoice_changelist"),
        {"action": "issue", "_selected_action": [str(invoice.pk)]},
    )
    invoice.refresh_from_db()
    assert invoice.state == "issued"


def test_the_admin_downloads_the_selected_as_csv(invoice, finance):
    response = finance.post(
        reverse("admin:billing_invoice_changelist"),
        {"action": "download_csv", "_selected_action": [str(invoice.pk)]},
    )
    assert response["Content-Type"] == "text/csv"


def test_admin_names_a_draft_and_its_rows_by_the_organizations_name(invoice, operator, client):
    operator.is_superuser = True
    operator.save()
    client.force_login(operator)
    page = client.get("/admin/billing/invoice/").content.decode()
    assert (
        f"draft Acme AI {invoice.period_start:%Y-%m}" in page,
        str(invoice.organization_id) in page,
    ) == (
        True,
        False,
    )
