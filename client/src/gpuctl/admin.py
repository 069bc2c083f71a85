"""`gpuctl admin`: the operator API (`/api/v1/operator/`), for a staff operator's token."""

from collections.abc import Callable, Sequence

import click

from . import admin_settings
from .output import Column, show_object, stdout
from .resources import actor, body, getter, lister, operator
from .session import Session, scoped


def reason(help: str = "Why (the organization reads it).") -> Callable:
    return click.option("--reason", required=True, help=help)


ORGANIZATION = click.option("--organization", help="Only this organization's (its slug).")


@click.group()
def admin():
    """Operate the portal (a staff operator's token): pools and nodes, GPU classes and priority
    tiers, decisions on orders, reservations and quota requests, quota grants, invoices, credit
    notes and credits, the queue, insights."""


for command in admin_settings.COMMANDS:
    admin.add_command(command)


@admin.group()
def nodes():
    """The cluster's nodes: list, get, cordon, uncordon, drain."""


nodes.add_command(
    lister(
        "ls",
        "List the nodes of every pool.",
        operator("nodes/"),
        [
            ("NAME", "name"),
            ("POOL", "pool"),
            ("GPU CLASS", "gpu_class"),
            ("GPUS", "gpu_count"),
            ("READY", "ready"),
            ("CORDONED", "cordoned"),
        ],
        empty="No nodes.",
    )
)
nodes.add_command(getter("get", "Show a node (by name).", operator("nodes/")))
nodes.add_command(
    actor("cordon", "Cordon a node: nothing new is placed on it.", operator("nodes/"), "cordon")
)
nodes.add_command(
    actor("uncordon", "Uncordon a node: it takes work again.", operator("nodes/"), "uncordon")
)
nodes.add_command(
    actor(
        "drain",
        "Drain a node: cordon it and send the workloads with a replica on it back to the queue.",
        operator("nodes/"),
        "drain",
        [
            ("node", "node.name"),
            ("cordoned", "node.cordoned"),
            (
                "requeued",
                lambda answer: [
                    f"{w['organization']}/{w['project']}/{w['name']}" for w in answer["requeued"]
                ],
            ),
        ],
    )
)


@admin.group()
def pools():
    """The cluster's pools: list."""


pools.add_command(
    lister(
        "ls",
        "List every pool (CPU pools too) with its nodes and GPUs.",
        operator("pools/"),
        [
            ("NAME", "name"),
            ("GPU CLASS", "gpu_class"),
            ("PURPOSE", "purpose"),
            ("NODES", "nodes"),
            ("READY", "nodes_ready"),
            ("CORDONED", "nodes_cordoned"),
            ("GPUS", "gpus"),
        ],
        empty="No pools.",
        options=[click.option("--gpu-class", help="Only this GPU class's.")],
    )
)


def decisions(
    name: str,
    help: str,
    columns: Sequence[Column],
    *,
    plural: str,
    waiting: str,
    approve: str,
    approve_options: Sequence[Callable] = (),
) -> click.Group:
    """A group deciding on the organizations' ``plural`` (at operator/``name``/): ``ls``
    (``--state waiting``: those waiting for a decision), ``approve ID``, ``reject ID
    --reason``."""
    group = click.Group(name, help=help)
    path = operator(f"{name}/")
    group.add_command(
        lister(
            "ls",
            f"List {plural} (--state {waiting}: those waiting for a decision).",
            path,
            [("ID", "id"), ("ORGANIZATION", "organization"), *columns, ("STATE", "state")],
            empty=f"No {plural}.",
            options=[
                click.option("--state", help=f"Only this state, e.g. {waiting}."),
                ORGANIZATION,
            ],
        )
    )
    group.add_command(actor("approve", approve, path, "approve", options=approve_options))
    group.add_command(
        actor("reject", "Reject one, with a reason.", path, "reject", options=[reason()])
    )
    return group


admin.add_command(
    decisions(
        "orders",
        "Orders across organizations: list, approve, reject.",
        [
            ("ITEM", "item"),
            ("QUANTITY", "quantity"),
            ("STARTS", "starts_at"),
            ("TOTAL", "total"),
        ],
        plural="orders",
        waiting="submitted",
        approve="Approve a submitted order.",
    )
)
admin.add_command(
    decisions(
        "reservations",
        "Reservations across organizations: list, approve, reject.",
        [
            ("POOL", "pool"),
            ("GPUS", lambda r: f"{r['gpus']} {r['mig_profile'] or r['gpu_class']}"),
            ("STARTS", "starts_at"),
            ("ENDS", "ends_at"),
            ("PROJECT", "project"),
        ],
        plural="reservations",
        waiting="requested",
        approve="Approve a requested reservation.",
    )
)
admin.add_command(
    decisions(
        "quota-requests",
        "Quota requests across organizations: list, approve, reject (deny).",
        [
            ("GPU CLASS", "gpu_class"),
            ("RESOURCE", "resource"),
            ("AMOUNT", "amount"),
            ("UNTIL", "until"),
            ("PROJECT", "project"),
            ("REASON", "reason"),
        ],
        plural="quota requests",
        waiting="requested",
        approve="Grant a requested increase: what was asked, or --amount and --until instead.",
        approve_options=[
            click.option("--amount", type=click.IntRange(min=1), help="Default: what was asked."),
            click.option("--until", help="ISO 8601 with offset; default: what was asked."),
        ],
    )
)

admin.add_command(
    lister(
        "queue",
        "The queue across tenants, in the engine's order, with why each workload waits.",
        operator("queue/"),
        [
            ("POS", "queue_position"),
            ("ORGANIZATION", "organization"),
            ("PROJECT", "project"),
            ("NAME", "name"),
            ("TIER", "tier"),
            ("GPUS", "gpus"),
            ("WAITS FOR", "pending_code"),
            ("WHY", "pending_message"),
            ("ESTIMATED START", "estimated_start"),
        ],
        empty="Nothing waits.",
        options=[
            ORGANIZATION,
            click.option("--tier", help="Only this priority tier's."),
            click.option("--pending-code", help="Only those waiting for this, e.g. quota."),
        ],
    )
)
admin.add_command(
    lister(
        "insights",
        "What the insights' rules find now, with advice.",
        operator("insights/"),
        [
            ("RULE", "rule"),
            ("FINDING", "finding"),
            ("ADVICE", "advice"),
            ("SUBJECTS", "subjects"),
        ],
        empty="Nothing found.",
        paged=False,
    )
)

# -- Quota grants ---------------------------------------------------------------------------


@admin.group("quota-grants")
def quota_grants():
    """Every organization's quota grants: list, set, remove (each with a reason)."""


quota_grants.add_command(
    lister(
        "ls",
        "List every organization's quota grants.",
        operator("quota-grants/"),
        [
            ("ORGANIZATION", "organization"),
            ("PROJECT", "project"),
            ("GPU CLASS", "gpu_class"),
            ("RESOURCE", lambda g: g["mig_profile"] or g["resource"]),
            ("GUARANTEE", "guarantee"),
            ("LIMIT", "limit"),
            ("REGION LIMITS", "region_limits"),
            ("UNIT", "unit"),
            ("COHORT", "cohort"),
        ],
        empty="No quota grants.",
        options=[
            ORGANIZATION,
            click.option("--project", help="Only this project's."),
            click.option("--gpu-class", help="Only this GPU class's."),
        ],
    )
)


def grant_key(command: Callable) -> Callable:
    """The options naming a grant: organization (or project), GPU class, resource; a reason."""
    for option in reversed(
        [
            click.option("--organization", required=True, help="The organization's slug."),
            click.option("--gpu-class", required=True, help="e.g. H100-80GB"),
            click.option("--resource", type=click.Choice(["gpus", "shared", "mig"])),
            click.option("--mig-profile", help="For --resource mig: e.g. mig-1g.10gb."),
            click.option("--project", help="One project's grant (default: the organization's)."),
            reason("Why (kept in the audit trail)."),
        ]
    ):
        command = option(command)
    return command


@quota_grants.command("set")
@grant_key
@click.option("--guarantee", type=click.IntRange(min=0), required=True)
@click.option("--limit", type=click.IntRange(min=0), required=True, help="Guarantee + borrowing.")
@click.option("--cohort", help="The cohort it borrows in.")
@click.option(
    "--region-limit",
    "region_limits",
    multiple=True,
    metavar="REGION=AMOUNT",
    help="The most in use in a region (repeat per region); --region-limit none lifts them all.",
)
@scoped()
def quota_grant_set(session: Session, region_limits, **fields):
    """Set a grant: created or changed."""
    payload = body(**fields)
    if region_limits:
        payload["region_limits"] = region_limits_of(region_limits)
    show_object(session.api.post("operator/quota-grants/", payload), session.output)


def region_limits_of(values: tuple[str, ...]) -> dict[str, int]:
    """ "us-east=16" options as the API's object; "none" alone: no region caps."""
    if values == ("none",):
        return {}
    limits = {}
    for value in values:
        region, _, amount = value.partition("=")
        if not region or not amount.isdigit():
            raise click.BadParameter(f"{value!r}: give REGION=AMOUNT, e.g. us-east=16.")
        limits[region] = int(amount)
    return limits


@quota_grants.command("remove")
@grant_key
@scoped()
def quota_grant_remove(session: Session, **fields):
    """Take a grant away."""
    session.api.post("operator/quota-grants/remove/", body(**fields))
    stdout.print(f"Removed {fields['organization']}'s {fields['gpu_class']} grant.")


# -- Invoices and credits -------------------------------------------------------------------


@admin.group()
def invoices():
    """Every organization's invoices: list, issue, void, correct with a credit note."""


invoices.add_command(
    lister(
        "ls",
        "List invoices and credit notes, latest period first.",
        operator("invoices/"),
        [
            ("ID", "id"),
            ("ORGANIZATION", "organization"),
            ("NUMBER", "number"),
            ("MONTH", "month"),
            ("STATE", "state"),
            ("TOTAL", "total"),
            ("CURRENCY", "currency"),
        ],
        empty="No invoices.",
        options=[
            click.option("--state", help="draft, issued, paid or void."),
            ORGANIZATION,
            click.option("--month", help="Its first day, e.g. 2026-11-01."),
        ],
    )
)
invoices.add_command(
    actor("issue", "Issue a draft whose period has ended.", operator("invoices/"), "issue")
)
invoices.add_command(
    actor(
        "void",
        "Void an issued, unpaid invoice, with a reason.",
        operator("invoices/"),
        "void",
        options=[reason()],
    )
)

invoices.add_command(
    actor(
        "credit-note",
        "Correct an issued or paid invoice with a credit note of --amount before tax, issued"
        " at once in the same numbering.",
        operator("invoices/"),
        "credit-notes",
        options=[
            click.option("--amount", required=True, help="Credited before tax, e.g. 120.00"),
            reason("What the credit note corrects (the organization reads it)."),
        ],
    )
)


@admin.group()
def credits():
    """Every organization's credit grants: list, grant."""


credits.add_command(
    lister(
        "ls",
        "List credit grants, newest first.",
        operator("credits/"),
        [
            ("ID", "id"),
            ("ORGANIZATION", "organization"),
            ("AMOUNT", "amount"),
            ("CURRENCY", "currency"),
            ("REASON", "reason"),
            ("GRANTED", "granted_at"),
            ("BY", "granted_by"),
        ],
        empty="No credits.",
        options=[ORGANIZATION],
    )
)


@credits.command("grant")
@click.option("--organization", required=True, help="The organization's slug.")
@click.option("--amount", required=True, help="e.g. 50.00")
@reason()
@scoped()
def credit_grant(session: Session, **fields):
    """Grant an organization credit."""
    show_object(session.api.post("operator/credits/", body(**fields)), session.output)
