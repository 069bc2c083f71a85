"""Workloads: submit from a job file, list (and watch), get, why, logs, events, cancel, wait,
and report a checkpoint."""

import time
from contextlib import suppress
from datetime import datetime

import click
from rich.live import Live

from . import jobfile
from .errors import WaitFailed, stderr
from .logs import logs
from .output import cell, machine, show_list, show_object, stdout, table
from .session import Session, scoped, workload_path

FINAL = ("Succeeded", "Failed", "Preempted", "Cancelled", "Expired")
# What each --for waits for: the states that end the wait well.
TARGETS = {"running": ("Running", "Succeeded"), "done": ("Succeeded",)}


def gpus(w: dict) -> str:
    if w["mig_count"]:
        each = f"{w['mig_count']}x{w['mig_profile']}"
    elif w["gpu_milli"]:
        each = f"{w['gpu_milli']}m"
    else:
        each = str(w["gpus"])
    where = w["gpu_class"] or "/".join(w["gpu_classes"]) or "cpu"
    return f"{each} {where}" + (f" x{w['replicas']}" if w["replicas"] > 1 else "")


def reason(w: dict) -> str:
    pending = w.get("pending")
    if pending:
        position = pending["queue_position"]
        return pending["message"] + (f" (#{position} in queue)" if position else "")
    return w.get("status_reason") or ""


def runs_in(w: dict) -> str:
    """ "eu-west (eu-west)": the cluster its replicas are placed in, and its region; "" when
    placed nowhere (servers before several clusters say nothing)."""
    where = w.get("runs_in")
    return f"{where['cluster']} ({where['region']})" if where else ""


COLUMNS = [
    ("NAME", "name"),
    ("KIND", "kind"),
    ("TIER", "tier"),
    ("STATE", "state"),
    ("GPUS", gpus),
    ("CLUSTER", runs_in),
    ("SUBMITTED", "submitted_at"),
    ("REASON", reason),
]


INTERVAL = click.option(
    "--interval", type=float, default=2.0, show_default=True, help="Seconds between polls."
)
TARGET = click.option(
    "--for",
    "target",
    type=click.Choice(list(TARGETS)),
    default="running",
    show_default=True,
    help="running: until it runs (or ran); done: until it succeeds.",
)
TIMEOUT = click.option("--timeout", type=float, help="Give up after this many seconds.")


def where(answer: dict) -> str:
    if answer["outcome"] != "admitted":
        return answer["gpu_class"]
    return f"{answer['gpu_class']} in {', '.join(answer['pools'])}: {', '.join(answer['nodes'])}"


def cost(answer: dict) -> str:
    priced = answer["cost"]
    if not priced:
        return "-"
    return f"{priced['amount']} {priced['currency']}" + ("/hour" if priced["per"] == "hour" else "")


def start(answer: dict) -> str | None:
    if answer["outcome"] == "admitted":
        return "now"
    return (answer["pending"] or {}).get("estimated_start")  # refused: none


def why_not(answer: dict) -> str:
    if answer["outcome"] == "refused":
        return " ".join(text for texts in answer["refusal"].values() for text in texts)
    if answer["outcome"] == "waits":
        pending = answer["pending"]
        return f"{pending['message']} (#{pending['queue_position']} in queue)"
    return f"would preempt {answer['preempts']} running" if answer["preempts"] else ""


CHECK_COLUMNS = [
    ("NAME", "name"),
    ("OUTCOME", "outcome"),
    ("WHERE", where),
    ("START", start),
    ("COST", cost),
    ("REASON", why_not),
]


def _check(session: Session, bodies: list[dict]) -> None:
    """What the scheduler would do with them: the what-if endpoints, nothing submitted."""
    if len(bodies) == 1:
        report = session.api.post(session.project_path("workloads/what-if/"), bodies[0])
    else:
        path = session.project_path("workload-batches/what-if/")
        report = session.api.post(path, {"workloads": bodies})
    if session.output != "table":
        machine(report, session.output)
        return
    stdout.print(table(report["workloads"], CHECK_COLUMNS))
    for workload in report["workloads"]:
        unblocking(session, workload["name"], workload["alternatives"])
    basis = report["basis"]
    if basis and basis["note"]:
        stderr.print(f"{basis['note']} Answered from a fresh read of the cluster.")


@click.command()
@click.option("-f", "--file", "path", required=True, help="The job file (YAML; - for stdin).")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a field.")
@click.option(
    "--check", is_flag=True, help="Only say what the scheduler would do with it; submit nothing."
)
@click.option("--region", help="Run only in this region (overrides the job file's).")
@click.option("--wait", is_flag=True, help="Wait until the workloads run (or --for done).")
@TARGET
@TIMEOUT
@INTERVAL
@scoped(project=True)
def submit(session: Session, path, overrides, check, region, wait, target, timeout, interval):
    """Submit the workload of a job file (a job array through the batch endpoint)."""
    project, bodies = jobfile.load(path, overrides)
    if region:
        bodies = [{**body, "region": region} for body in bodies]
    if project and not session.project_flag:  # --project wins over the file's project
        session.target.project = project
    if check:
        _check(session, bodies)
        return
    if len(bodies) == 1:
        created = [session.api.post(session.project_path("workloads/"), bodies[0])]
    else:
        created = session.api.post(session.project_path("workload-batches/"), {"workloads": bodies})
    show_list(created, session.output, COLUMNS, empty="Nothing submitted.")
    if wait:
        _wait(session, [w["name"] for w in created], target, timeout, interval)


@click.command("ls")
@click.option("--state", help="Only this state (pending, running, succeeded, …).")
@click.option("--kind", help="Only this kind (training, inference, …).")
@click.option("--tier", help="Only this priority tier.")
@click.option("--name", help="Only names containing this.")
@click.option("-w", "--watch", is_flag=True, help="Refresh the table until Ctrl-C.")
@INTERVAL
@click.option("--timeout", type=float, help="Stop watching after this many seconds.")
@scoped(project=True)
def ls(session: Session, state, kind, tier, name, watch, interval, timeout):
    """List the project's workloads, newest first."""
    filters = {
        "state": state,
        "kind": kind,
        "tier": tier,
        "name": name,
        "ordering": "-submitted_at",
    }

    def read() -> list:
        return session.api.list(session.project_path("workloads/"), **filters)

    if not watch:
        show_list(read(), session.output, COLUMNS, empty="No workloads.")
        return
    if session.output != "table":
        raise click.UsageError("--watch shows a table: leave out -o.")
    started = time.monotonic()
    live = Live(table(read(), COLUMNS), console=stdout, auto_refresh=False)
    with live, suppress(KeyboardInterrupt):  # Ctrl-C ends the watch, not in error
        while timeout is None or time.monotonic() - started < timeout:
            time.sleep(interval)
            live.update(table(read(), COLUMNS), refresh=True)


def start_range(pending: dict) -> str:
    """A waiting workload's estimated start as people read it: "likely 2026-12-03 10:00
    (between 09:10 and 13:40)" (UTC); a bound on another day names its date."""
    if not pending.get("estimated_start"):
        return "-"
    likely, low, high = (
        datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None
        for value in (
            pending["estimated_start"],
            pending.get("estimated_start_low"),
            pending.get("estimated_start_high"),
        )
    )

    def at(moment: datetime) -> str:
        return moment.strftime("%H:%M" if moment.date() == likely.date() else "%Y-%m-%d %H:%M")

    text = f"likely {likely:%Y-%m-%d %H:%M} UTC"
    if low is None or low == likely == high:
        return text
    if high is None:
        return f"{text} (not before {at(low)})"
    return f"{text} (between {at(low)} and {at(high)})"


@click.command()
@click.argument("name")
@scoped(project=True)
def get(session: Session, name):
    """Show one workload: its request, state, placements and times."""
    workload = session.api.get(workload_path(session, name))
    show_object(workload, session.output)
    if session.output == "table" and workload["pending"]:
        stdout.print(f"estimated start: {start_range(workload['pending'])}")
    if session.output == "table" and workload["placements"]:
        placements = [
            ("REPLICA", "replica"),
            ("CLUSTER", "cluster"),
            ("REGION", "region"),
            ("NODE", "node"),
            ("GPUS", "gpu_indices"),
        ]
        stdout.print(table(workload["placements"], placements, title="placements"))


def unblocking(session: Session, what: str, alternatives: list[dict] | None) -> None:
    """Print what would unblock ``what``: the alternatives the scheduler has tried."""
    if not alternatives:
        return
    stdout.print(f"What would unblock {what} (tried on the scheduler as the cluster is now):")
    for alternative in alternatives:
        stdout.print(f"  - {alternative_line(alternative, server=session.api.url)}")


def alternative_line(alternative: dict, *, server: str) -> str:
    """One alternative in words: what changes, when it starts, where, what it costs, and for
    a quota request the console's form filled in (on ``server``)."""
    if alternative["admitted"] and not alternative["not_before"]:
        start = "starts now"
    else:
        start = f"starts {cell(alternative['start'])}"
    line = f"{alternative['change']}: {start}"
    if alternative["pool"]:
        line += f" on {alternative['pool']}"
    if alternative["cost"] is not None:
        line += f", {alternative['cost']} {alternative['currency']} over its max runtime"
    elif alternative["cost_per_hour"] is not None:
        line += f", {alternative['cost_per_hour']} {alternative['currency']} an hour"
    ask = alternative["quota_request"]
    if ask:
        line += f"; ask for {ask['amount']} more: {server}{ask['form_url']}"
    return line


@click.command()
@click.argument("name")
@scoped(project=True)
def why(session: Session, name):
    """Why a workload waits: the scheduler's reason, its queue position and estimated start,
    and what would unblock it (alternatives the scheduler has tried)."""
    workload = session.api.get(workload_path(session, name))
    pending = workload["pending"]
    answer = {"name": name, "state": workload["state"], "pending": pending}
    if session.output != "table":
        machine(answer, session.output)
    elif pending:
        stdout.print(f"{name} is pending: {pending['message']} [{pending['code']}]")
        stdout.print(f"  queue position: {cell(pending['queue_position'])}")
        stdout.print(f"  estimated start: {start_range(pending)}")
        unblocking(session, "it", pending.get("alternatives"))
    else:
        since = workload["finished_at"] or workload["started_at"] or workload["admitted_at"]
        why_not = f" ({workload['status_reason']})" if workload["status_reason"] else ""
        stdout.print(f"{name} is not waiting: {workload['state']} since {cell(since)}{why_not}.")


@click.command()
@click.argument("name")
@scoped(project=True)
def events(session: Session, name):
    """A workload's timeline: submitted, admitted, running, preempted, ended, and why."""
    timeline = session.api.get(workload_path(session, name, "events/"))
    columns = [("AT", "at"), ("KIND", "kind"), ("MESSAGE", "message")]
    show_list(timeline, session.output, columns, empty="No events.")


@click.command()
@click.argument("name")
@click.option(
    "--at",
    type=click.DateTime(formats=["%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%SZ"]),
    help="When it was saved, with its offset (default: now).",
)
@scoped(project=True)
def checkpoint(session: Session, name, at):
    """Report that a running workload saved a checkpoint: evicted later, it loses only the work
    since, and it is a cheaper victim."""
    body = {"at": at.isoformat().replace("+00:00", "Z")} if at else {}
    answer = session.api.post(workload_path(session, name, "checkpoint/"), body)
    show_object(answer, session.output)


@click.command()
@click.argument("names", nargs=-1, required=True)
@scoped(project=True)
def cancel(session: Session, names):
    """Cancel workloads (a running one is stopped and its GPUs released)."""
    ended = [session.api.post(workload_path(session, name, "cancel/")) for name in names]
    show_list(ended, session.output, COLUMNS, empty="")


@click.command()
@click.argument("names", nargs=-1, required=True)
@TARGET
@TIMEOUT
@INTERVAL
@scoped(project=True)
def wait(session: Session, names, target, timeout, interval):
    """Wait until workloads run (or, --for done, succeed), showing their progress."""
    _wait(session, list(names), target, timeout, interval)


def _wait(session: Session, names: list, target: str, timeout, interval) -> None:
    """Poll until every workload reached ``target``; exit 5 if one ended otherwise or the
    timeout passed. Each change of state is told on stderr (stdout stays for -o json)."""
    started, seen, waiting = time.monotonic(), {}, list(names)
    with stderr.status("waiting…") as status:
        while True:
            for name in list(waiting):
                workload = session.api.get(workload_path(session, name))
                state = workload["state"]
                if seen.get(name) != state:
                    seen[name] = state
                    why_now = reason(workload)
                    stderr.print(f"{name}: {state}" + (f" ({why_now})" if why_now else ""))
                if state in TARGETS[target]:
                    waiting.remove(name)
                elif state in FINAL:
                    raise WaitFailed(f"{name} ended {state}: {workload['status_reason'] or '-'}")
            if not waiting:
                return
            elapsed = time.monotonic() - started
            if timeout is not None and elapsed >= timeout:
                raise WaitFailed(f"Still waiting after {timeout:g} s: {', '.join(waiting)}.")
            status.update(f"waiting for {', '.join(waiting)} ({elapsed:.0f} s)")
            time.sleep(interval)


COMMANDS = [submit, ls, get, why, logs, events, checkpoint, cancel, wait]
