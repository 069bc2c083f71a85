"""The preemption contract's credits through the API: in the usage summary (owners and admins;
another tenant's usage a 404), on the invoice and in its CSV, JSON and PDF exports."""

import csv
import io
import json

import pytest
from pypdf import PdfReader

from ...roles import MANAGERS_READ
from ..conftest import DAY

pytestmark = pytest.mark.django_db

USAGE = "/api/v1/organizations/acme/usage/"
LIST = "/api/v1/organizations/acme/invoices/"
THE_DAY = {"start": DAY.date().isoformat(), "end": DAY.date().isoformat()}


@pytest.mark.parametrize(("caller", "status"), MANAGERS_READ)
def test_owners_and_admins_read_the_credits_in_the_usage_and_nobody_else(
    lost_work_invoice, actors, api_as, caller, status
):
    assert api_as(actors.get(caller)).get(USAGE, THE_DAY).status_code == status


def test_another_tenants_usage_with_its_credits_is_a_404(lost_work_invoice, bruno, api_as):
    assert api_as(bruno).get(USAGE, THE_DAY).status_code == 404


def test_the_usage_answers_each_credit_with_its_hours_and_amount(lost_work_invoice, alice, api_as):
    usage = api_as(alice).get(USAGE, THE_DAY).json()
    [credit] = usage["credits"]
    assert (
        credit["kind"],
        credit["project"],
        credit["hours"],
        credit["unit_price"],
        credit["amount"],
        usage["credited"],
    ) == ("lost_work_credit", "vision", "12.0000", "2.9000", "34.80", "34.80")


def test_the_invoice_answers_the_credit_as_a_negative_line(lost_work_invoice, alice, api_as):
    got = api_as(alice).get(f"{LIST}{lost_work_invoice.pk}/").json()
    credits = [line for line in got["lines"] if line["charge"] == "lost_work_credit"]
    assert ([line["amount"] for line in credits], got["total"]) == (["-34.80"], "23.20")


def test_a_credit_lines_usage_is_empty_not_an_error(lost_work_invoice, alice, api_as):
    line = lost_work_invoice.lines.get(charge="lost_work_credit")
    response = api_as(alice).get(f"{LIST}{lost_work_invoice.pk}/lines/{line.pk}/usage/")
    assert (response.status_code, response.json()["results"]) == (200, [])


def test_the_csv_export_has_the_credit_row(lost_work_invoice, alice, api_as):
    response = api_as(alice).get(f"{LIST}{lost_work_invoice.pk}/export/csv/")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [(r["charge"], r["amount"]) for r in rows if r["charge"] == "lost_work_credit"] == [
        ("lost_work_credit", "-34.80")
    ]


def test_the_json_export_has_the_credit_line(lost_work_invoice, alice, api_as):
    response = api_as(alice).get(f"{LIST}{lost_work_invoice.pk}/export/json/")
    lines = json.loads(response.content)["lines"]
    assert [(line["charge"], line["amount"]) for line in lines][-1] == (
        "lost_work_credit",
        "-34.80",
    )


def test_the_pdf_export_names_the_credit_and_its_amount(lost_work_invoice, alice, api_as):
    response = api_as(alice).get(f"{LIST}{lost_work_invoice.pk}/export/pdf/")
    text = " ".join(page.extract_text() for page in PdfReader(io.BytesIO(response.content)).pages)
    assert ("Credit for work lost" in text, "-34.80" in text, "vision/llama-ft" in text) == (
        True,
        True,
        True,
    )
