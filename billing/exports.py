"""Invoices as finance and tenants take them away: CSV and JSON per invoice and per month
(every invoice of it), and a PDF per invoice drawn with reportlab."""

import csv
import functools
import io
import json
import re
from decimal import Decimal
from pathlib import Path
from xml.sax.saxutils import escape

import fontpkg_noto_sans
import justmytype_intl_cjk
from django.http import HttpResponse
from reportlab.lib import colors
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import getSampleStyleSheet
from reportlab.lib.units import mm
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.ttfonts import TTFont
from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

from portal.errors import NotFound

from .models import Invoice

LINE_COLUMNS = ["description", "project", "gpu_class", "charge", "hours", "unit_price", "amount"]
MONTH_COLUMNS = ["number", "organization", "period_start", "state", "currency", *LINE_COLUMNS]


# CSV cells a spreadsheet would run as a formula (OWASP's CSV injection triggers) get a leading
# apostrophe; a plain decimal number (an amount, "-12.50") is data and is left as it is.
_FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"-?\d+(\.\d+)?")


def csv_cell(value):
    """A value as a CSV cell that no spreadsheet evaluates."""
    formula = isinstance(value, str) and value.startswith(_FORMULA_TRIGGERS)
    return "'" + value if formula and not _NUMBER.fullmatch(value) else value


def _csv_row(row: dict) -> dict:
    return {column: csv_cell(value) for column, value in row.items()}


# PDF text is set in Noto Sans (Latin, Greek, Cyrillic and more), with Noto Sans JP, KR, SC and
# TC for the characters it lacks, both embedded (subset) so that any viewer shows them.
TEXT_FONT = "NotoSans"
_NOTO_CJK = Path(justmytype_intl_cjk.__file__).parent / "fonts" / "ofl"
_FALLBACK_FONTS = {
    f"NotoSans{script.upper()}": _NOTO_CJK
    / f"notosans{script}"
    / f"NotoSans{script.upper()}[wght].ttf"
    for script in ("jp", "kr", "sc", "tc")
}


@functools.cache
def _font(name: str) -> TTFont:
    """A font registered with reportlab, once per process (read on first use)."""
    if name == TEXT_FONT:
        path = fontpkg_noto_sans.ROOT / "files" / "NotoSans[wdth,wght].ttf"
    else:
        path = _FALLBACK_FONTS[name]
    font = TTFont(name, str(path))
    pdfmetrics.registerFont(font)
    return font


def _font_of(char: str) -> str:
    """The first font that has a glyph for the character (the text font if none has)."""
    for name in (TEXT_FONT, *_FALLBACK_FONTS):
        if ord(char) in _font(name).face.charToGlyph:
            return name
    return TEXT_FONT


def pdf_text(text: str) -> str:
    """Text (a tenant's or the portal's) as the markup of a reportlab Paragraph that shows it
    literally: escaped, so that no tag in it is obeyed, and each run of characters in a font
    that has them."""
    runs: list[tuple[str, str]] = []
    for char in str(text):
        font = TEXT_FONT if char.isspace() else _font_of(char)
        if runs and runs[-1][0] == font:
            runs[-1] = (font, runs[-1][1] + char)
        else:
            runs.append((font, char))
    return "".join(f'<font name="{font}">{escape(run)}</font>' for font, run in runs)


def _money(value: Decimal | None) -> str:
    return "" if value is None else f"{value:.2f}"


def _line_row(line) -> dict:
    return {
        "description": line.description,
        "project": line.project.slug if line.project_id else "",
        "gpu_class": line.gpu_class.name if line.gpu_class_id else "",
        "charge": line.charge,
        "hours": str(line.hours),
        "unit_price": "" if line.unit_price is None else str(line.unit_price),
        "amount": _money(line.amount),
    }


def _rows(invoice: Invoice) -> list[dict]:
    """Its lines, then the credit it took (if any) as a negative amount: the rows add up to
    the amount before tax."""
    rows = [_line_row(line) for line in _lines(invoice)]
    if invoice.credits:
        rows.append(
            {
                **dict.fromkeys(LINE_COLUMNS, ""),
                "description": "Credit applied",
                "charge": "credits",
                "amount": _money(-invoice.credits),
            }
        )
    return rows


def _local(moment, invoice: Invoice):
    """``moment`` in the invoice's organization's time zone, where its month is."""
    return moment.astimezone(invoice.organization.zone)


def _lines(invoice: Invoice):
    return invoice.lines.select_related("project", "gpu_class")


def invoice_json(invoice: Invoice) -> dict:
    return {
        "id": str(invoice.pk),
        "number": invoice.number,
        "organization": invoice.organization.slug,
        "period_start": invoice.period_start.isoformat(),
        "period_end": invoice.period_end.isoformat(),
        "time_zone": invoice.organization.time_zone or "UTC",
        "state": invoice.state,
        "corrects": invoice.corrects.number if invoice.corrects_id else None,
        "currency": invoice.currency,
        "lines": [_line_row(line) for line in _lines(invoice)],
        "subtotal": _money(invoice.subtotal),
        "credits": _money(invoice.credits),
        "tax_rate": str(invoice.tax_rate),
        "tax": _money(invoice.tax),
        "total": _money(invoice.total),
    }


def invoice_csv(invoice: Invoice) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=LINE_COLUMNS)
    writer.writeheader()
    writer.writerows(_csv_row(row) for row in _rows(invoice))
    return out.getvalue()


def month_csv(invoices) -> str:
    """Every line of every invoice given (a month's, for finance), one row each."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=MONTH_COLUMNS)
    writer.writeheader()
    for invoice in invoices.select_related("organization"):
        head = {
            "number": invoice.number or "draft",
            "organization": invoice.organization.slug,
            "period_start": invoice.month.isoformat(),
            "state": invoice.state,
            "currency": invoice.currency,
        }
        writer.writerows(_csv_row(head | row) for row in _rows(invoice))
    return out.getvalue()


def invoice_pdf(invoice: Invoice) -> bytes:
    """The invoice on A4: the organization, the period, every line and the total. Every text
    is set literally (never read as markup) in fonts embedded into the file."""
    out = io.BytesIO()
    styles = getSampleStyleSheet()
    title = "Credit note" if invoice.is_credit_note else "Invoice"
    organization = invoice.organization
    story = [
        # The portal's own words and number, in the title's bold face.
        Paragraph(escape(f"{title} {invoice.number or '(draft)'}"), styles["Title"]),
        Paragraph(pdf_text(f"{organization.name} ({organization.slug})"), styles["Normal"]),
        Paragraph(
            pdf_text(
                f"Period: {_local(invoice.period_start, invoice):%Y-%m-%d} to"
                f" {_local(invoice.period_end, invoice):%Y-%m-%d}"
                f" ({organization.time_zone or 'UTC'}, end excluded)"
            ),
            styles["Normal"],
        ),
        Spacer(1, 6 * mm),
    ]
    rows = [["Line", "Hours", f"Unit price ({invoice.currency})", f"Amount ({invoice.currency})"]]
    rows += [
        [
            Paragraph(pdf_text(line.description), styles["BodyText"]),
            str(line.hours),
            "" if line.unit_price is None else str(line.unit_price),
            _money(line.amount),
        ]
        for line in _lines(invoice)
    ]
    totals = [["Subtotal", "", "", _money(invoice.subtotal)]]
    if invoice.credits:
        totals.append(["Credits", "", "", _money(-invoice.credits)])
    totals += [
        [f"Tax ({invoice.tax_rate * 100:.2f}%)", "", "", _money(invoice.tax)],
        ["Total", "", "", _money(invoice.total)],
    ]
    rows += totals
    table = Table(rows, colWidths=[95 * mm, 20 * mm, 30 * mm, 30 * mm], repeatRows=1)
    table.setStyle(
        TableStyle(
            [
                ("FONTNAME", (0, 0), (-1, 0), "Helvetica-Bold"),
                ("FONTNAME", (0, -1), (-1, -1), "Helvetica-Bold"),
                ("LINEBELOW", (0, 0), (-1, 0), 0.5, colors.black),
                ("LINEABOVE", (0, -len(totals)), (-1, -len(totals)), 0.5, colors.black),
                ("ALIGN", (1, 0), (-1, -1), "RIGHT"),
                ("VALIGN", (0, 0), (-1, -1), "TOP"),
            ]
        )
    )
    story.append(table)
    document = SimpleDocTemplate(out, pagesize=A4, title=f"{title} {invoice.number or ''}")
    document.build(story)
    return out.getvalue()


EXPORTS = {
    "csv": ("text/csv", lambda invoice: invoice_csv(invoice).encode()),
    "json": (
        "application/json",
        lambda invoice: json.dumps(invoice_json(invoice), indent=2).encode(),
    ),
    "pdf": ("application/pdf", invoice_pdf),
}


def invoice_file(invoice: Invoice, kind: str) -> HttpResponse:
    """The invoice as a download: CSV, JSON or PDF (any other kind: 404)."""
    if kind not in EXPORTS:
        raise NotFound("Exports are csv, json and pdf.")
    content_type, render = EXPORTS[kind]
    response = HttpResponse(render(invoice), content_type=content_type)
    name = invoice.number or f"draft-{invoice.period_start:%Y-%m}"
    response["Content-Disposition"] = f'attachment; filename="invoice-{name}.{kind}"'
    return response


USAGE_COLUMNS = [
    "day",
    "gpu_class",
    "mig_profile",
    "resource",
    "tier",
    "project",
    "gpu_hours",
    "mig_instance_hours",
    "cost",
]


def usage_csv(rows: list[dict]) -> str:
    """Rated usage rows (``selectors.usage_summary``'s), one per day, class, tier and project."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=USAGE_COLUMNS, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(_csv_row(row | {"cost": _money(row["cost"])}) for row in rows)
    return out.getvalue()


# The operator's books: one row per pool and category, for finance.
BOOKS_COLUMNS = ["pool", "gpu_class", "category", "gpu_hours", "cost", "share_of_hours"]


def pool_books_json(books) -> dict:
    """One pool's books (``selectors.PoolBooks``) as the operator API and the JSON export
    give them."""
    return {
        "pool": books.pool_name,
        "gpu_class": books.gpu_class_name,
        "hours": {name: str(hours) for name, hours in books.hours.items()},
        "total_hours": str(books.total_hours),
        "cost": str(books.cost),
        "cost_per_gpu_hour": None
        if books.cost_per_gpu_hour is None
        else str(books.cost_per_gpu_hour),
        "costs": {name: str(cost) for name, cost in books.costs.items()},
        "revenue": str(books.revenue),
        "margin": str(books.margin),
        "utilisation": None if books.utilisation is None else str(books.utilisation),
        "idle_reservations": [
            {
                "reservation": str(row["reservation"].pk),
                "organization": row["reservation"].organization.slug,
                "project": row["reservation"].project.slug if row["reservation"].project else None,
                "idle_hours": str(row["idle_hours"]),
                "used_hours": str(row["used_hours"]),
                "lent_hours": str(row["lent_hours"]),
            }
            for row in books.idle_reservations
        ],
        "on_demand": [
            {
                "organization": row["organization"].slug,
                "project": row["project"].slug if row["project"] else None,
                "tier": row["tier"].name if row["tier"] else None,
                "gpu_hours": str(row["gpu_hours"]),
            }
            for row in books.on_demand
        ],
        "idle_guarantees": [
            {
                "organization": row["organization"].slug,
                "project": row["project"].slug if row["project"] else None,
                "idle_hours": str(row["idle_hours"]),
            }
            for row in books.idle_guarantees
        ],
    }


def books_json(kept) -> str:
    """A month's books (``selectors.KeptBooks``) as a JSON file for finance."""
    return json.dumps(
        {
            "starts_at": kept.starts_at.isoformat(),
            "ends_at": kept.ends_at.isoformat(),
            "computed_at": kept.computed_at.isoformat(),
            "closed": kept.closed,
            "pools": [pool_books_json(pool) for pool in kept.pools],
        },
        indent=2,
    )


def books_file(kept, kind: str) -> HttpResponse:
    """A month's books (``selectors.KeptBooks``) as a download, CSV or JSON (any other kind:
    404), for the staff page and the operator API alike."""
    if kind not in ("csv", "json"):
        raise NotFound("The books export as csv or json.")
    if kind == "csv":
        body, content_type = books_csv(kept.pools), "text/csv"
    else:
        body, content_type = books_json(kept), "application/json"
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="books-{kept.starts_at:%Y-%m}.{kind}"'
    return response


def books_csv(books: list) -> str:
    """Each pool's hours and cost by category, one row each."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=BOOKS_COLUMNS)
    writer.writeheader()
    for pool in books:
        total = pool.total_hours
        for name, hours in pool.hours.items():
            row = {
                "pool": pool.pool_label,
                "gpu_class": pool.gpu_class_name,
                "category": name,
                "gpu_hours": str(hours),
                "cost": str(pool.costs[name]),
                "share_of_hours": str((hours / total).quantize(Decimal("0.0001"))) if total else "",
            }
            writer.writerow(_csv_row(row))
    return out.getvalue()
