"""Backups: a pg_dump of a seeded database restores with pg_restore into a fresh database that
holds the same rows and needs no migration (docs/operators/backup.md)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from billing import services as billing
from billing.models import BillingRecord, Invoice, UsageInterval
from portal import clock
from scheduling import services as scheduling
from scheduling.backends import get_backend
from scheduling.models import Placement, Workload
from tenants.models import Organization, Project

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]
KEY_TABLES = [Organization, Project, Workload, Placement, UsageInterval, BillingRecord, Invoice]


@pytest.fixture(autouse=True)
def postgresql_with_its_tools():
    if connection.vendor != "postgresql":
        pytest.skip("backups are pg_dump/pg_restore of PostgreSQL; set DATABASE_URL (see README)")
    for tool in ("pg_dump", "pg_restore", "psql"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not on PATH")


def libpq_environment(database: str) -> dict[str, str]:
    """The environment the PostgreSQL tools read to reach `database` as the tests do."""
    settings = connection.settings_dict
    values = {
        "PGHOST": settings["HOST"],
        "PGPORT": str(settings["PORT"] or ""),
        "PGUSER": settings["USER"],
        "PGPASSWORD": settings["PASSWORD"],
        "PGDATABASE": database,
    }
    return {**os.environ, **{key: value for key, value in values.items() if value}}


def run(*command: str, database: str) -> str:
    return subprocess.run(
        command,
        env=libpq_environment(database),
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout


def row_count(model, *, database: str) -> int:
    table = model._meta.db_table
    return int(run("psql", "-tAc", f'SELECT count(*) FROM "{table}"', database=database))


@pytest.fixture
def fresh_database():
    name = f"{connection.settings_dict['NAME']}_restored"
    admin = connection.settings_dict["NAME"]
    run("psql", "-c", f'DROP DATABASE IF EXISTS "{name}"', database=admin)
    run("psql", "-c", f'CREATE DATABASE "{name}"', database=admin)
    yield name
    run("psql", "-c", f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', database=admin)


def test_a_dump_restores_into_a_fresh_database_with_the_same_rows_and_no_migration_due(
    fresh_database, tmp_path
):
    call_command("seed_demo", stdout=open(os.devnull, "w"))  # noqa: SIM115
    # The demo's work on the simulated cluster, metered into billing records.
    backend = get_backend()
    for project in Project.objects.all():
        scheduling.project_provision(project_id=project.pk, backend=backend)
    scheduling.scheduling_cycle_run()
    admitted = Workload.objects.filter(state=Workload.State.ADMITTED).values_list("pk", flat=True)
    scheduling.workloads_launch(workload_ids=list(admitted), backend=backend)
    for _ in range(2):
        clock.advance(seconds=60)
        scheduling.workloads_sync(backend=backend)
    clock.advance(seconds=2 * 3600)
    scheduling.workloads_sync(backend=backend)
    billing.usage_meter()
    source = connection.settings_dict["NAME"]
    dump = tmp_path / "portal.dump"
    run("pg_dump", "--format=custom", "--no-owner", f"--file={dump}", database=source)
    run(
        "pg_restore",
        "--no-owner",
        "--exit-on-error",
        f"--dbname={fresh_database}",
        str(dump),
        database=fresh_database,
    )

    counts = {m.__name__: row_count(m, database=source) for m in KEY_TABLES}
    restored = {m.__name__: row_count(m, database=fresh_database) for m in KEY_TABLES}
    assert restored == counts
    assert all(counts.values()), counts

    settings = connection.settings_dict
    url = (
        f"postgres://{settings['USER']}:{settings['PASSWORD'] or ''}@{settings['HOST']}:"
        f"{settings['PORT'] or 5432}/{fresh_database}"
    )
    checked = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--check", "--settings", "portal.settings.test"],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": url},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
