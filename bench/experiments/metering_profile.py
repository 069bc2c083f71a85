"""Where the metering benchmark's time goes on PostgreSQL: per step, the wall time, the CPU
seconds of this process and of its database backend (read from ``/proc``: the server must run
on this machine), the bytes the backend read and wrote, the WAL written and the checkpoints the
server made meanwhile. One connection (``PORTAL_METER_CONNECTIONS=1``), so that every statement
runs on the backend measured; wall time well above the two CPU figures is time spent waiting
(disk, WAL flushes, other processes on the cores).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/portal \
        nice python bench/experiments/metering_profile.py --size 100000 --explain

``--explain`` prints ``EXPLAIN (ANALYZE, BUFFERS)`` of the first rating range (rolled back)
before rating. WAL and checkpoint figures are the server's, so other databases' writes count
in them too.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

from django.conf import settings
from django.db import connection, transaction

from bench.metering import MONTH, MONTH_START, seed
from bench.results import calibration_seconds
from billing import services
from billing.services import rating_sql


def backend_counters(pid: int) -> dict:
    # On the CPU, and waiting for one (nanoseconds).
    running, waiting = Path(f"/proc/{pid}/schedstat").read_text().split()[:2]
    io = dict(line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT wal_bytes FROM pg_stat_wal), (SELECT wal_fpi FROM pg_stat_wal),"
            " (SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter)"
        )
        wal, full_pages, checkpoints = cursor.fetchone()
    return {
        "cpu": int(running) / 1e9,
        "runqueue": int(waiting) / 1e9,
        "read": int(io["read_bytes"]),
        "written": int(io["write_bytes"]),
        "wal": int(wal),
        "full_pages": int(full_pages),
        "checkpoints": checkpoints,
    }


def measured(step, pid: int) -> dict:
    before = backend_counters(pid)
    wall, cpu = time.perf_counter(), time.process_time()
    step()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    after = backend_counters(pid)
    return {
        "wall_s": round(wall, 2),
        "python_cpu_s": round(cpu, 2),
        "backend_cpu_s": round(after["cpu"] - before["cpu"], 2),
        "backend_runqueue_s": round(after["runqueue"] - before["runqueue"], 2),
        "backend_read_mib": round((after["read"] - before["read"]) / 2**20),
        "backend_written_mib": round((after["written"] - before["written"]) / 2**20),
        "wal_mib": round((after["wal"] - before["wal"]) / 2**20),
        "wal_full_pages": after["full_pages"] - before["full_pages"],
        "checkpoints": after["checkpoints"] - before["checkpoints"],
    }


def explain_first_range(horizon) -> None:
    """The plan of rating the first range, with its times and buffers; rolled back."""
    from billing.models import UsageInterval

    first = UsageInterval.objects.order_by("pk").values_list("pk", flat=True)[0]
    original = rating_sql.connection.cursor

    with transaction.atomic():

        def explaining():
            cursor = original()
            execute = cursor.execute

            def explain(sql, params=None):
                if "WITH todo" in sql:
                    execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
                    print("\n".join(row[0] for row in cursor.fetchall()), flush=True)
                    return execute("SELECT 0", ())
                return execute(sql, params)

            cursor.execute = explain
            return cursor

        rating_sql.connection.cursor = explaining
        try:
            rating_sql.intervals_rate(
                first=first, last=first + services.rating.RATE_CHUNK, horizon=horizon
            )
        finally:
            rating_sql.connection.cursor = original
        transaction.set_rollback(True)


# Ways to rate tried against the statement as it is: name: (RATE_SQL's text replaced, SQL run
# before rating, SQL run after it).
VARIANTS = {
    "as_is": ({}, [], []),
    # As before 2026-12-03: the insert skipping a record whose key exists.
    "with_on_conflict": (
        {
            "      FROM rated\n    RETURNING 1": (
                "      FROM rated\n    ON CONFLICT DO NOTHING\n    RETURNING 1"
            )
        },
        [],
        [],
    ),
    # Straight into November's partition (every record of the bench is in November), ids from
    # the parent's sequence (a partition has no identity of its own).
    "into_month_partition": (
        {
            "INSERT INTO {record} (": "INSERT INTO {record_month} (id, ",
            "    SELECT id, organization_id": (
                "    SELECT nextval(pg_get_serial_sequence('billing_billingrecord', 'id')),"
                " id, organization_id"
            ),
        },
        [],
        [],
    ),
    "sorted_by_organization": (
        {"      FROM rated\n": "      FROM rated ORDER BY organization_id, starts_at\n"},
        [],
        [],
    ),
    "without_org_index": (
        {},
        ["DROP INDEX record_org_start"],
        ["CREATE INDEX record_org_start ON billing_billingrecord (organization_id, starts_at)"],
    ),
}


def rate_variants(names: list[str], pid: int, horizon) -> list:
    """Rate every interval once per variant, from nothing each time (records emptied,
    intervals unrated and vacuumed), alternating so that the machine's load weighs alike."""
    from billing.models import BillingRecord, UsageInterval

    original = rating_sql.RATE_SQL
    figures = []
    for name in names:
        replaced, before, after = VARIANTS[name]
        sql = original
        for old, new in replaced.items():
            assert old in sql, old
            sql = sql.replace(old, new)
        sql = sql.replace("{record_month}", '"billing_billingrecord_2026_11"')
        with connection.cursor() as cursor:
            cursor.execute("TRUNCATE billing_billingrecord")
            UsageInterval.objects.update(rated_until=None)
            cursor.execute("VACUUM ANALYZE billing_usageinterval")
            cursor.execute("VACUUM ANALYZE billing_billingrecord")
            for statement in before:
                cursor.execute(statement)
        rating_sql.RATE_SQL = sql
        try:
            figures.append([name, measured(lambda: services.usage_rate(now=horizon), pid)])
        finally:
            rating_sql.RATE_SQL = original
        figures[-1][1]["records"] = BillingRecord.objects.count()
        with connection.cursor() as cursor:
            for statement in after:
                cursor.execute(statement)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--explain", action="store_true")
    parser.add_argument("--variants", default="", help=f"comma-separated, of {', '.join(VARIANTS)}")
    args = parser.parse_args()
    settings.PORTAL_METER_CONNECTIONS = 1
    database = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        seed(placements=args.size, organizations=100, seed=42)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            pid = cursor.fetchone()[0]
        after = MONTH_START + MONTH + timedelta(days=1)
        figures = {"sync": measured(services.usage_intervals_sync, pid)}
        if args.explain:
            explain_first_range(after)
        if args.variants:
            figures["rate"] = rate_variants(args.variants.split(","), pid, after)
        else:
            figures["rate"] = measured(lambda: services.usage_rate(now=after), pid)
        figures["invoices"] = measured(
            lambda: services.invoices_draft_month(year=2026, month=11), pid
        )
    finally:
        connection.creation.destroy_test_db(database, verbosity=0)
    load = os.getloadavg()
    print(
        json.dumps(
            {
                "bench": "metering_profile",
                "intervals": args.size,
                "calibration_s": calibration_seconds(),
                "load_average": [round(x, 2) for x in load],
                **figures,
            }
        )
    )


if __name__ == "__main__":
    main()
