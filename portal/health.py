"""Readiness: can this process serve? The database answers, the broker takes a connection,
and no migration is left to apply. Each check answers None when fine, else what failed."""

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor

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
