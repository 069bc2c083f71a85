"""`gpuctl logs`: a workload's container logs, printed as they come with -f. The portal ends a
followed answer after a while (PORTAL_LOGS_FOLLOW_MAX_SECONDS) even when the workload still
runs; gpuctl then asks again from a little before, skipping the lines it printed, for as long
as the workload is admitted or running (as `kubectl logs -f` follows a pod to its end). After
its containers were removed, the portal answers the tail it kept of them, and gpuctl says so on
stderr."""

import re
import time
from collections import deque
from contextlib import suppress

import click

from .errors import ApiError, stderr
from .session import Session, scoped, workload_path

# How long ago (30s, 10m, 2h, 1d), or a time with its UTC offset: what the API takes.
SINCE = re.compile(r"^(\d{1,6}[smhd]|\d{4}-\d{2}-\d{2}T.+)$")
ACTIVE = ("Admitted", "Running")
OVERLAP_SECONDS = 2  # asked again from this long before the last answer ended
QUIET_SECONDS = 2.0  # the pause after an answer that brought no new line
REMEMBERED = 1000  # lines kept to recognise the overlap's


@click.command()
@click.argument("name")
@click.option("-f", "--follow", is_flag=True, help="Keep printing lines while it runs.")
@click.option("--replica", type=click.IntRange(min=0), help="Only this replica's lines.")
@click.option("--tail", type=click.IntRange(min=1), help="Only the last N lines.")
@click.option("--since", help="Only lines since: 30s, 10m, 2h, 1d ago, or 2026-06-01T09:00:00Z.")
@scoped(project=True)
def logs(session: Session, name, follow, replica, tail, since):
    """Print a workload's container logs (-f: follow them while it runs)."""
    if since is not None and not SINCE.match(since):
        raise click.BadParameter(
            "30s, 10m, 2h, 1d, or a time with its offset", param_hint="--since"
        )
    params = {"replica": replica, "tail": tail, "since": since}
    with suppress(KeyboardInterrupt):
        if follow:
            _follow(session, name, params)
        else:
            _print(session, name, params, recent=deque(maxlen=REMEMBERED), overlap=False)


def _print(session: Session, name: str, params: dict, *, recent: deque, overlap: bool) -> int:
    """Print an answer's lines; with ``overlap``, skip its first lines while they are ones
    already printed. How many new lines it printed."""
    printed = 0
    path = workload_path(session, name, "logs/")
    with session.api.stream_lines(path, **params) as response:
        if response.headers.get("X-Logs-Source") == "kept-tail" and not overlap:
            _kept_note(response.headers)
        for line in response.iter_lines():
            if overlap and line in recent:
                continue
            overlap = False
            click.echo(line)
            recent.append(line)
            printed += 1
    return printed


def _kept_note(headers) -> None:
    """On stderr, so that the lines stay the log's: they are the tail kept at teardown."""
    cut = (
        "; the beginning of a longer log is lost"
        if headers.get("X-Logs-Truncated") == "true"
        else ""
    )
    stderr.print(
        f"[dim]Its containers were removed: the last lines kept at "
        f"{headers.get('X-Logs-Kept-At', '?')}{cut}.[/]"
    )


def _follow(session: Session, name: str, params: dict) -> None:
    recent: deque = deque(maxlen=REMEMBERED)
    params = {**params, "follow": "true"}
    again = False
    while True:
        try:
            printed = _print(session, name, params, recent=recent, overlap=again)
        except ApiError as error:
            if again and error.status == 409:  # its containers are gone, their logs too
                return
            raise
        ended = time.monotonic()
        if session.api.get(workload_path(session, name))["state"] not in ACTIVE:
            return
        if not printed:
            time.sleep(QUIET_SECONDS)
        ago = int(time.monotonic() - ended) + OVERLAP_SECONDS
        params = {**params, "tail": None, "since": f"{ago}s"}
        again = True
