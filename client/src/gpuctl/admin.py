"""`gpuctl admin`: the operator API (`/api/v1/operator/`), for a staff operator's token."""

import click

from .output import show_object
from .resources import actor, lister
from .session import Session, scoped


def operator(rest: str):
    return lambda session: f"operator/{rest}"


@click.group()
def admin():
    """Operate the portal (a staff operator's token): nodes, and decisions on orders."""


@admin.group()
def nodes():
    """The cluster's nodes: list, cordon, uncordon."""


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
nodes.add_command(
    actor("cordon", "Cordon a node: nothing new is placed on it.", operator("nodes/"), "cordon")
)
nodes.add_command(
    actor("uncordon", "Uncordon a node: it takes work again.", operator("nodes/"), "uncordon")
)


@admin.group()
def orders():
    """Orders across organizations: list, approve, reject."""


orders.add_command(
    lister(
        "ls",
        "List orders (--state submitted: those waiting for a decision).",
        operator("orders/"),
        [
            ("ID", "id"),
            ("ORGANIZATION", "organization"),
            ("ITEM", "item"),
            ("QUANTITY", "quantity"),
            ("STARTS", "starts_at"),
            ("STATE", "state"),
            ("TOTAL", "total"),
        ],
        empty="No orders.",
        options=[click.option("--state", help="Only this state, e.g. submitted.")],
    )
)
orders.add_command(actor("approve", "Approve a submitted order.", operator("orders/"), "approve"))


@orders.command("reject")
@click.argument("order_id", metavar="ID")
@click.option("--reason", required=True, help="Why (the organization reads it).")
@scoped()
def order_reject(session: Session, order_id, reason):
    """Reject a submitted order, with a reason."""
    answer = session.api.post(f"operator/orders/{order_id}/reject/", {"reason": reason})
    show_object(answer, session.output)
