"""Money: the catalog, orders, usage, invoices (and their CSV, JSON and PDF files), credits and
budgets."""

from pathlib import Path

import click

from .errors import GpuctlError
from .output import machine, show_list, show_object, stdout, table
from .resources import actor, body, lister, org, resource_group
from .session import Session, scoped

catalog = lister(
    "catalog",
    "What the organization may order now, at the price in force.",
    org("catalog/"),
    [
        ("ITEM", "slug"),
        ("NAME", "name"),
        ("KIND", "kind"),
        ("GPU CLASS", "gpu_class"),
        ("UNIT", "unit"),
        ("PRICE", "unit_price"),
        ("CURRENCY", "currency"),
    ],
    empty="Nothing to order.",
)

# -- Orders ---------------------------------------------------------------------------------

ORDER_COLUMNS = [
    ("ID", "id"),
    ("ITEM", "item"),
    ("QUANTITY", "quantity"),
    ("STARTS", "starts_at"),
    ("ENDS", "ends_at"),
    ("STATE", "state"),
    ("TOTAL", "total"),
    ("CREATED BY", "created_by"),
]


orders = resource_group(
    "orders",
    "Order from the catalog (reservations, quota packages), and follow the orders.",
    "orders/",
    ORDER_COLUMNS,
    plural="orders",
    singular="an order",
    options=[click.option("--state", help="Only this state (draft, submitted, approved, …).")],
)
orders.add_command(actor("submit", "Submit a draft order.", org("orders/"), "submit"))
orders.add_command(actor("cancel", "Cancel an order.", org("orders/"), "cancel"))


@orders.command("create")
@click.option("--item", required=True, help="A catalog item (gpuctl catalog).")
@click.option("--quantity", type=int, required=True)
@click.option("--start", "starts_at", required=True, help="ISO 8601 with offset.")
@click.option("--end", "ends_at", required=True, help="ISO 8601 with offset.")
@click.option("--project", help="For one project (default: the whole organization).")
@click.option("--pool", help="A pool, for a reservation item.")
@click.option("--draft", is_flag=True, default=None, help="Keep it as a draft.")
@scoped()
def order_create(session: Session, **fields):
    """Order a catalog item (submitted at once unless --draft)."""
    show_object(session.api.post(session.org_path("orders/"), body(**fields)), session.output)


# -- Usage and credits ----------------------------------------------------------------------


@click.command()
@click.option("--start", help="First day (YYYY-MM-DD); default: this month's first.")
@click.option("--end", help="Last day (YYYY-MM-DD); default: this month's last.")
@scoped()
def usage(session: Session, start, end):
    """GPU-hours and cost per GPU class over a period, with this month's forecast."""
    summary = session.api.get(session.org_path("usage/"), start=start, end=end)
    if session.output != "table":
        machine(summary, session.output)
        return
    columns = [("GPU CLASS", "gpu_class"), ("MIG", "mig_profile"), ("RESOURCE", "resource")]
    columns += [("GPU-HOURS", "gpu_hours"), ("MIG INSTANCE-HOURS", "mig_instance_hours")]
    stdout.print(table(summary["totals"], [*columns, ("COST", "cost")]))
    currency = summary["currency"]
    stdout.print(f"GPU-hours {summary['gpu_hours']}, cost {summary['cost']} {currency}")
    if summary["forecast"] is not None:
        stdout.print(f"Forecast for the month: {summary['forecast']} {currency}")


@click.command()
@scoped()
def credits(session: Session):
    """The organization's credit grants and balance."""
    answer = session.api.get(session.org_path("credits/"))
    if session.output != "table":
        machine(answer, session.output)
        return
    columns = [("GRANTED", "granted_at"), ("AMOUNT", "amount"), ("REASON", "reason")]
    show_list(answer["grants"], "table", columns, empty="No credit grants.")
    stdout.print(f"Balance: {answer['balance']} {answer['currency']}")


# -- Invoices -------------------------------------------------------------------------------

INVOICE_COLUMNS = [
    ("ID", "id"),
    ("NUMBER", "number"),
    ("MONTH", lambda i: i["month"][:7]),
    ("STATE", "state"),
    ("TOTAL", "total"),
    ("CURRENCY", "currency"),
    ("CORRECTS", "corrects"),
]


invoices = resource_group(
    "invoices",
    "Invoices and credit notes; download them as PDF, CSV or JSON.",
    "invoices/",
    INVOICE_COLUMNS,
    plural="invoices",
)


def invoice_find(session: Session, ref: str) -> dict:
    """An invoice by its id, its number, its month (YYYY-MM: the month's invoice, not a credit
    note) or `latest` (the newest month's)."""
    found = session.api.list(session.org_path("invoices/"), ordering="-period_start")
    monthly = [i for i in found if not i["corrects"]]
    if ref == "latest":
        matches = monthly[:1]
    else:
        matches = [i for i in found if ref in (i["id"], i["number"])]
        matches = matches or [i for i in monthly if i["month"].startswith(ref)]
    if not matches:
        raise GpuctlError(f"No invoice {ref!r}: gpuctl invoices ls lists them.")
    return matches[0]


@invoices.command("get")
@click.argument("ref", default="latest")
@scoped()
def invoice_get(session: Session, ref):
    """Show an invoice and its lines (REF: an id, a number, YYYY-MM or latest)."""
    invoice = invoice_find(session, ref)
    show_object(invoice, session.output)
    if session.output == "table":
        columns = [("DESCRIPTION", "description"), ("HOURS", "hours"), ("UNIT PRICE", "unit_price")]
        stdout.print(table(invoice["lines"], [*columns, ("AMOUNT", "amount")], title="lines"))


@invoices.command("download")
@click.argument("ref", default="latest")
@click.option(
    "--format", "kind", type=click.Choice(["pdf", "csv", "json"]), default="pdf", show_default=True
)
@click.option(
    "-O",
    "--output-file",
    "target",
    help="Where to write it (default: the name the portal gives; - for stdout).",
)
@scoped()
def invoice_download(session: Session, ref, kind, target):
    """Download an invoice (REF: an id, a number, YYYY-MM, or latest) as PDF, CSV or JSON."""
    invoice = invoice_find(session, ref)
    content, name = session.api.download(
        session.org_path(f"invoices/{invoice['id']}/export/{kind}/")
    )
    if target == "-":
        click.echo(content, nl=False)  # bytes go to the binary stream as they are
        return
    path = Path(target or name or f"invoice-{invoice['id']}.{kind}")
    path.write_bytes(content)
    stdout.print(f"Wrote {path} ({len(content)} bytes).")


# -- Budgets --------------------------------------------------------------------------------

BUDGET_COLUMNS = [
    ("ID", "id"),
    ("PROJECT", lambda b: b["project"] or "(organization)"),
    ("MONTHLY", "monthly_amount"),
    ("SPENT", "spent"),
    ("CURRENCY", "currency"),
    ("THRESHOLDS %", "thresholds"),
    ("HARD STOP", "hard_stop"),
]


budgets = resource_group(
    "budgets",
    "Monthly budgets of the organization or of a project, with alert thresholds.",
    "budgets/",
    BUDGET_COLUMNS,
    plural="budgets",
    paged=False,
)


@budgets.command("set")
@click.option("--amount", "monthly_amount", required=True, help="Per month, e.g. 1500.00")
@click.option("--project", help="A project's budget (default: the organization's).")
@click.option(
    "--threshold",
    "thresholds",
    type=int,
    multiple=True,
    help="A percentage to be mailed at (repeat).",
)
@click.option("--hard-stop", is_flag=True, default=None, help="Refuse new work once spent.")
@scoped()
def budget_set(session: Session, monthly_amount, project, thresholds, hard_stop):
    """Set the organization's budget, or a project's, replacing the one it had."""
    request = body(
        monthly_amount=monthly_amount,
        project=project,
        thresholds=list(thresholds) or None,
        hard_stop=hard_stop,
    )
    show_object(session.api.put(session.org_path("budgets/"), request), session.output)


@budgets.command("rm")
@click.argument("budget_id", metavar="ID")
@scoped()
def budget_rm(session: Session, budget_id):
    """Delete a budget."""
    session.api.delete(session.org_path(f"budgets/{budget_id}/"))
    stdout.print(f"Deleted budget {budget_id}.")


COMMANDS = [catalog, orders, usage, credits, invoices, budgets]
