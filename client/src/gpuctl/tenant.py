"""The tenant API besides workloads: projects, GPU classes and tiers, quotas and quota requests,
reservations, API tokens; and (billing.py) the catalog, orders, usage, invoices, credits and
budgets."""

import click

from . import billing
from .output import show_list, show_object, stdout
from .resources import actor, body, lister, org, resource_group
from .session import Session, scoped

projects = lister(
    "projects",
    "List the organization's projects.",
    org("projects/"),
    [("SLUG", "slug"), ("NAME", "name"), ("NAMESPACE", "namespace"), ("CREATED", "created_at")],
    empty="No projects.",
)
gpu_classes = lister(
    "gpu-classes",
    "List the GPU classes of the cluster.",
    lambda session: "gpu-classes/",
    [("NAME", "name"), ("MEMORY GIB", "memory_gib"), ("MIG PROFILES", "mig_profiles")],
    empty="No GPU classes.",
    paged=False,
)
tiers = lister(
    "tiers",
    "List the priority tiers a workload may ask for.",
    lambda session: "priority-tiers/",
    [
        ("NAME", "name"),
        ("VALUE", "value"),
        ("PREEMPTIBLE", "preemptible"),
        ("DESCRIPTION", "description"),
    ],
    empty="No tiers.",
    paged=False,
)
quotas = lister(
    "quotas",
    "List the organization's quotas and what is in use.",
    org("quotas/"),
    [
        ("PROJECT", "project"),
        ("GPU CLASS", "gpu_class"),
        ("RESOURCE", "resource"),
        ("MIG", "mig_profile"),
        ("GUARANTEE", "guarantee"),
        ("LIMIT", "limit"),
        ("IN USE", "in_use"),
        ("UNIT", "unit"),
    ],
    empty="No quotas.",
)


@click.command("standing")
@scoped()
def standing(session: Session):
    """The organization's standing in fair share: its decayed usage, its share, and why its
    work is ordered where it is."""
    found = session.api.get(session.org_path("fair-share/"))
    show_object(
        found,
        session.output,
        [
            ("ORGANIZATION", "organization"),
            ("WEIGHT", "weight"),
            ("DECAYED GPU-HOURS", lambda s: f"{s['decayed_gpu_hours']:,.1f}"),
            ("FAIR SHARE", lambda s: f"{s['fair_share']:.1%}"),
            ("USED", lambda s: f"{s['times_its_share']:.1f}x its share"),
            ("BEHIND", "behind"),
            ("WHY", "sentence"),
        ],
    )


# -- Quota requests -------------------------------------------------------------------------

QUOTA_REQUEST_COLUMNS = [
    ("ID", "id"),
    ("GPU CLASS", "gpu_class"),
    ("RESOURCE", "resource"),
    ("AMOUNT", "amount"),
    ("STATE", "state"),
    ("REQUESTED", "requested_at"),
    ("REASON", "reason"),
]


quota_requests = resource_group(
    "quota-requests",
    "Ask operators for more quota, and follow the requests.",
    "quota-requests/",
    QUOTA_REQUEST_COLUMNS,
    plural="quota requests",
    singular="a quota request",
)


@quota_requests.command("create")
@click.option("--gpu-class", required=True, help="e.g. H100-80GB")
@click.option("--amount", type=int, required=True, help="How much more, in the resource's unit.")
@click.option("--reason", required=True, help="Why (operators read it).")
@click.option("--resource", type=click.Choice(["gpus", "shared", "mig"]), help="Default: gpus.")
@click.option("--mig-profile", help="For --resource mig: e.g. mig-1g.10gb.")
@click.option("--until", help="Until when (ISO 8601 with offset); default: for good.")
@click.option("--project", help="For one project (default: the whole organization).")
@scoped()
def quota_request_create(session: Session, **fields):
    """Ask operators for more of a GPU class's quota."""
    asked = session.api.post(session.org_path("quota-requests/"), body(**fields))
    show_object(asked, session.output)


# -- Reservations ---------------------------------------------------------------------------

RESERVATION_COLUMNS = [
    ("ID", "id"),
    ("POOL", "pool"),
    ("GPUS", lambda r: f"{r['gpus']} {r['mig_profile'] or r['gpu_class']}"),
    ("STARTS", "starts_at"),
    ("ENDS", "ends_at"),
    ("STATE", "state"),
    ("PROJECT", "project"),
]


reservations = resource_group(
    "reservations",
    "Reserve GPUs of a pool over a window, and follow the reservations.",
    "reservations/",
    RESERVATION_COLUMNS,
    plural="reservations",
    singular="a reservation",
)
reservations.add_command(actor("cancel", "Cancel a reservation.", org("reservations/"), "cancel"))


@reservations.command("create")
@click.option("--gpu-class", required=True)
@click.option("--gpus", type=int, required=True, help="Whole GPUs, or instances of --mig-profile.")
@click.option(
    "--start", "starts_at", required=True, help="ISO 8601 with offset: 2027-06-01T09:00:00Z"
)
@click.option("--end", "ends_at", required=True, help="ISO 8601 with offset.")
@click.option("--pool", help="A pool of the class (default: any).")
@click.option("--project", help="For one project (default: the whole organization).")
@click.option("--weeks", type=int, help="Repeat weekly for this many weeks (default 1).")
@click.option("--lead-time-minutes", type=int, help="Start holding the GPUs this early.")
@click.option("--mig-profile", help="Reserve instances of this MIG profile.")
@scoped()
def reservation_create(session: Session, **fields):
    """Request a reservation (all its weeks, or none)."""
    held = session.api.post(session.org_path("reservations/"), body(**fields))
    show_list(held, session.output, RESERVATION_COLUMNS, empty="Nothing reserved.")


@reservations.command("timeline")
@click.option("--days", type=click.IntRange(1, 90), default=14, show_default=True)
@scoped()
def reservation_timeline(session: Session, days):
    """Free GPUs of each pool per day, and the reservations holding them."""
    pools = session.api.get(session.org_path("reservation-timeline/"), days=days)
    if session.output != "table":
        show_list(pools, session.output, [])
        return
    for pool in pools:
        free = " ".join(str(day["free_gpus"]) for day in pool["free_by_day"])
        kind = pool["mig_profile"] or pool["gpu_class"]
        stdout.print(f"[bold]{pool['pool']}[/] ({pool['capacity']} {kind}) free per day: {free}")


# -- Capacity calendar ----------------------------------------------------------------------

CAPACITY_COLUMNS = [
    ("POOL", "pool"),
    ("GPU CLASS", "gpu_class"),
    ("GPUS", "schedulable"),
    ("FREE NOW", lambda p: p["free"][0]),
    ("LEAST FREE", lambda p: min(p["free"])),
    ("MOST ON ONE NODE NOW", lambda p: p["largest_on_node"][0]),
    ("FIRST HOUR ALL FREE", lambda p: _first_all_free(p)),
]


def _first_all_free(pool: dict) -> int | None:
    """Hours from the calendar's start until every GPU of the pool is free (None: never)."""
    return next((h for h, free in enumerate(pool["free"]) if free == pool["schedulable"]), None)


@click.command("capacity")
@click.option("--pool", help="Only this pool.")
@click.option("--gpu-class", help="Only the pools of this class.")
@click.option("--from", "from_", help="Start (ISO 8601 with offset; default: now).")
@click.option("--hours", type=int, help="Hours covered (default 336: 14 days).")
@click.option("--gpus", type=int, help="Find the earliest windows with this many GPUs together.")
@click.option("--level", type=click.Choice(["node", "rack"]), help="Together on: (default node).")
@click.option("--length", type=int, help="Hours the block must stay free (default 1).")
@scoped()
def capacity(session: Session, from_, **query):
    """Free, reserved and busy GPUs of each pool per hour ahead, and where a block fits."""
    calendar = session.api.get(session.org_path("capacity-calendar/"), **query, **{"from": from_})
    if session.output != "table":
        show_object(calendar, session.output)
        return
    stdout.print(f"From {calendar['start']}, {calendar['hours']} hours:")
    show_list(calendar["pools"], "table", CAPACITY_COLUMNS, empty="No GPU pools.")
    for window in calendar["windows"]:
        stdout.print(f"{window['sentence']} ({window['starts_at']} to {window['ends_at']})")
    if query.get("gpus") and not calendar["windows"]:
        stdout.print("No window in the calendar fits that block.")


# -- Tokens ---------------------------------------------------------------------------------

TOKEN_COLUMNS = [
    ("ID", "id"),
    ("NAME", "name"),
    ("OWNER", "owner"),
    ("SCOPE", "scope"),
    ("PREFIX", "prefix"),
    ("STATE", "state"),
    ("EXPIRES", "expires_at"),
    ("LAST USED", "last_used_at"),
]


tokens = resource_group(
    "tokens", "API tokens of the organization.", "tokens/", TOKEN_COLUMNS, plural="API tokens"
)
tokens.add_command(actor("revoke", "Revoke a token at once.", org("tokens/"), "revoke"))


@tokens.command("issue")
@click.argument("name")
@click.option("--scope", type=click.Choice(["read", "write"]), help="Default: read.")
@click.option("--expires", "expires_at", help="When it stops working (ISO 8601 with offset).")
@scoped()
def token_issue(session: Session, name, scope, expires_at):
    """Issue a token: its secret is shown this once."""
    issued = session.api.post(
        session.org_path("tokens/"), body(name=name, scope=scope, expires_at=expires_at)
    )
    show_object(issued, session.output)


COMMANDS = [
    projects,
    gpu_classes,
    tiers,
    quotas,
    standing,
    quota_requests,
    reservations,
    capacity,
    tokens,
    *billing.COMMANDS,
]
