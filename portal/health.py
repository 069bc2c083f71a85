"""Readiness: can this process serve? The database answers, the broker takes a connection,
and no migration is left to apply. Each check answers None when fine, else what failed.

And the task side's heartbeats (below): has a worker taken a task, has a scheduling cycle
finished, within a few of their periods?"""

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor
from django.db.models import Max
from django.utils.functional import SimpleLazyObject
from prometheus_client.core import GaugeMetricFamily

from . import clock

# Seconds a check waits for the broker: a probe must answer before its own timeout.
BROKER_TIMEOUT = 2.0


def database_check() -> str | None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as error:
        return f"database unreachable: {error}".strip()
    return None


def broker_check() -> str | None:
    from portal.broker import transport_of
    from portal.celery import app

    url = settings.CELERY_BROKER_URL
    try:
        with app.connection_for_write(
            url, connect_timeout=BROKER_TIMEOUT, transport=transport_of(url)
        ) as broker:
            broker.ensure_connection(max_retries=1, interval_start=0, timeout=BROKER_TIMEOUT)
    except Exception as error:  # kombu raises its transports' own errors
        return f"broker unreachable: {type(error).__name__}: {error}"
    return None


def migrations_check() -> str | None:
    try:
        executor = MigrationExecutor(connection)
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError as error:
        return f"migrations unknown: {error}".strip()
    if plan:
        names = ", ".join(f"{m.app_label}.{m.name}" for m, _ in plan[:5])
        return f"{len(plan)} migration(s) not applied: {names}"
    return None


CHECKS = {"database": database_check, "broker": broker_check, "migrations": migrations_check}


def readiness() -> dict[str, str | None]:
    """Each check by name: None when it passed, else why it failed. The migrations are not
    asked about when the database does not answer."""
    results: dict[str, str | None] = {}
    for name, check in CHECKS.items():
        if name == "migrations" and results.get("database"):
            results[name] = "not checked: the database is unreachable"
            continue
        results[name] = check()
    return results


# The task side: is work that the worker and beat do still being done? The web tier's
# readiness (above) leaves it out: a dead worker is not mended by taking web pods out of
# service, and the console and API still serve reads and queue submissions meanwhile. Each
# heartbeat is a moment that recurs every period while that work is done; /healthz/workers,
# /metrics and the operators' banner report the stale ones.

# A heartbeat is stale once it is this many periods old, and at least STALE_MIN_SECONDS (a
# worker restarting, or a slow pass, is not yet an outage).
STALE_AFTER_PERIODS = 3
STALE_MIN_SECONDS = 60.0


@dataclass(frozen=True)
class Heartbeat:
    name: str
    # What stops when it is stale, e.g. "no worker has taken a task".
    silence: str
    last_seen: Callable[[], datetime | None]
    period_seconds: Callable[[], float]
    # The clock `last_seen` was written in.
    now: Callable[[], datetime] = clock.wall


@dataclass(frozen=True)
class HeartbeatStanding:
    name: str
    age_seconds: float | None  # None: never seen
    stale_after_seconds: float
    silence: str

    @property
    def stale(self) -> bool:
        return self.age_seconds is None or self.age_seconds > self.stale_after_seconds

    @property
    def problem(self) -> str | None:
        """What is wrong in words, None when fine."""
        if self.age_seconds is None:
            return f"{self.silence} yet"
        if self.stale:
            return (
                f"{self.silence} for {self.age_seconds:.0f} s "
                f"(stale after {self.stale_after_seconds:.0f} s)"
            )
        return None


_heartbeats: dict[str, Heartbeat] = {}


def heartbeat_register(heartbeat: Heartbeat) -> None:
    """Report `heartbeat` (once per name: ``ready()`` may run again)."""
    _heartbeats[heartbeat.name] = heartbeat


def heartbeats() -> list[HeartbeatStanding]:
    """Each registered heartbeat's age against its limit, by name."""
    standings = []
    for name, heartbeat in sorted(_heartbeats.items()):
        last = heartbeat.last_seen()
        age = None if last is None else max((heartbeat.now() - last).total_seconds(), 0.0)
        stale_after = max(STALE_AFTER_PERIODS * heartbeat.period_seconds(), STALE_MIN_SECONDS)
        standings.append(HeartbeatStanding(name, age, stale_after, heartbeat.silence))
    return standings


def heartbeats_stale() -> list[HeartbeatStanding]:
    return [standing for standing in heartbeats() if standing.stale]


def worker_heartbeat_record(*, hostname: str) -> None:
    """A worker ran the heartbeat task now (portal.tasks.worker_heartbeat)."""
    from portal.models import WorkerHeartbeat

    WorkerHeartbeat.objects.update_or_create(
        hostname=hostname[:255], defaults={"seen_at": clock.wall()}
    )


def worker_last_seen() -> datetime | None:
    from portal.models import WorkerHeartbeat

    return WorkerHeartbeat.objects.aggregate(last=Max("seen_at"))["last"]


WORKER_HEARTBEAT = Heartbeat(
    name="worker",
    silence="no worker has taken a task",
    last_seen=worker_last_seen,
    period_seconds=lambda: settings.PORTAL_WORKER_HEARTBEAT_SECONDS,
)


def heartbeat_metrics():
    """Each heartbeat's age and its limit, for /metrics (an age of +Inf: never seen)."""
    age = GaugeMetricFamily(
        "portal_heartbeat_age_seconds",
        "Seconds since the task side last showed it works, by heartbeat: worker (a worker took "
        "the heartbeat task beat sends), scheduling_cycle (a cycle finished); +Inf: never.",
        labels=["heartbeat"],
    )
    limit = GaugeMetricFamily(
        "portal_heartbeat_stale_after_seconds",
        "The age past which /healthz/workers reports the heartbeat stale.",
        labels=["heartbeat"],
    )
    for standing in heartbeats():
        age.add_metric(
            [standing.name], math.inf if standing.age_seconds is None else standing.age_seconds
        )
        limit.add_metric([standing.name], standing.stale_after_seconds)
    return [age, limit]


def operator_banner(request) -> dict:
    """Template context: for staff, the stale heartbeats (read only if a page shows them)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_staff:
        return {}
    return {"heartbeats_stale": SimpleLazyObject(heartbeats_stale)}
