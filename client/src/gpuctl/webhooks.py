"""`gpuctl webhooks`: the organization's webhook endpoints (its owners' and admins') and their
deliveries, over `…/organizations/{org}/webhooks/` (docs/api/webhooks.md)."""

import click

from .errors import stderr
from .output import show_list, show_object, stdout
from .resources import body, resource_group
from .session import Session, scoped

ENDPOINT_COLUMNS = [
    ("ID", "id"),
    ("URL", "url"),
    ("EVENTS", "event_types"),
    ("ACTIVE", "is_active"),
    ("SECRET", "secret_hint"),
    ("DESCRIPTION", "description"),
]
DELIVERY_COLUMNS = [
    ("ID", "id"),
    ("EVENT", "event_type"),
    ("STATE", "state"),
    ("ATTEMPTS", "attempts"),
    ("LAST ATTEMPT", "last_attempt_at"),
    ("LAST STATUS", "last_status_code"),
    ("LAST RESPONSE", lambda d: d["last_error"] or d["last_response_body"]),
    ("NEXT ATTEMPT", "next_attempt_at"),
]
EVENTS_HELP = (
    "An event type (repeat for several): workload.state_changed, order.decided,"
    " reservation.decided, quota_request.decided, invoice.issued, budget.threshold_crossed."
)

webhooks = resource_group(
    "webhooks",
    "Webhook endpoints the portal posts the organization's events to (owners and admins):"
    " list, create, get, update, delete; their deliveries, and redeliver one.",
    "webhooks/",
    ENDPOINT_COLUMNS,
    plural="webhook endpoints",
    singular="a webhook endpoint",
)


def _endpoint_path(session: Session, webhook_id: str, rest: str = "") -> str:
    return session.org_path(f"webhooks/{webhook_id}/{rest}")


@webhooks.command("create")
@click.option("--url", required=True, help="http or https, reachable from the portal.")
@click.option("--event", "event_types", multiple=True, required=True, help=EVENTS_HELP)
@click.option("--description", help="What it is for.")
@click.option("--secret", help="Your own signing secret (16+ characters); default: generated.")
@click.option("--paused", is_flag=True, help="Register it paused: nothing is sent until resumed.")
@scoped()
def webhook_create(session: Session, url, event_types, description, secret, paused):
    """Register an endpoint. Its signing secret is shown this once: store it."""
    created = session.api.post(
        session.org_path("webhooks/"),
        body(
            url=url,
            event_types=list(event_types),
            description=description,
            secret=secret,
            is_active=False if paused else None,
        ),
    )
    show_object(created, session.output)
    if session.output == "table":
        stderr.print("Store the secret now: the portal never shows it again.")


@webhooks.command("update")
@click.argument("webhook_id", metavar="ID")
@click.option("--url", help="A new URL.")
@click.option("--event", "event_types", multiple=True, help=f"Replaces the list. {EVENTS_HELP}")
@click.option("--description")
@click.option("--secret", help="A new signing secret (16+ characters).")
@click.option("--pause/--resume", "paused", default=None, help="Pause or resume deliveries.")
@scoped()
def webhook_update(session: Session, webhook_id, url, event_types, description, secret, paused):
    """Change an endpoint: only the fields given."""
    changes = body(
        url=url,
        event_types=list(event_types) or None,
        description=description,
        secret=secret,
        is_active=None if paused is None else not paused,
    )
    if not changes:
        raise click.UsageError("Nothing to change: give --url, --event, --secret, --pause, …")
    show_object(session.api.patch(_endpoint_path(session, webhook_id), changes), session.output)


@webhooks.command("delete")
@click.argument("webhook_id", metavar="ID")
@scoped()
def webhook_delete(session: Session, webhook_id):
    """Delete an endpoint and its deliveries."""
    session.api.delete(_endpoint_path(session, webhook_id))
    stdout.print(f"Deleted webhook endpoint {webhook_id}.")


@webhooks.command("deliveries")
@click.argument("webhook_id", metavar="ID")
@click.option("--state", help="pending, redelivering, delivered or failed.")
@click.option("--event-type", help="Only this event type's.")
@scoped()
def webhook_deliveries(session: Session, webhook_id, **filters):
    """List an endpoint's deliveries, newest first, with their last attempt's answer."""
    deliveries = session.api.list(_endpoint_path(session, webhook_id, "deliveries/"), **filters)
    show_list(deliveries, session.output, DELIVERY_COLUMNS, empty="No deliveries.")


def _on_delivery(name: str, help: str, *, verb: str = "") -> click.Command:
    """A command on one delivery of an endpoint (ID DELIVERY_ID): GET it, or POST ``verb``."""

    def run(session: Session, webhook_id, delivery_id):
        path = _endpoint_path(session, webhook_id, f"deliveries/{delivery_id}/{verb}")
        answer = session.api.post(path) if verb else session.api.get(path)
        show_object(answer, session.output)

    run = click.argument("delivery_id", metavar="DELIVERY_ID")(scoped()(run))
    return click.command(name, help=help)(click.argument("webhook_id", metavar="ID")(run))


webhooks.add_command(_on_delivery("delivery", "Show one delivery, with the body it sends."))
webhooks.add_command(
    _on_delivery(
        "redeliver",
        "Send a delivered or failed delivery once more (the same id and body).",
        verb="redeliver/",
    )
)


COMMANDS = [webhooks]
