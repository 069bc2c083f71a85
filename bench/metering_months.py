"""Metering as months accumulate: the newest month's placements turned into usage intervals,
rated and drafted with N older months already metered and drafted, on the database of
DATABASE_URL (a test database made for the run and dropped after).

The months are calendar months (UTC) up to November 2026, their placements bench/metering.py's
(as long as the Alibaba trace's GPU pods, over 100 organizations). Each older month is metered
(sync, rating) and drafted first, untimed; then the newest month's three steps are timed. Flat
means the newest month's times do not grow with ``--older``.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/portal \
        nice python bench/metering_months.py --older 1,6 --per-month 100000
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings.test")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db.models import Sum  # noqa: E402

from bench.database_runs import database_arguments, on_test_databases  # noqa: E402
from bench.metering import fixtures, placements_add, timed  # noqa: E402
from billing import services  # noqa: E402
from billing.models import BillingRecord, UsageInterval  # noqa: E402

NEWEST = datetime(2026, 11, 1, tzinfo=UTC)


def months(older: int) -> list[tuple[datetime, datetime]]:
    """The ``older`` calendar months before NEWEST and NEWEST's, oldest first, as [start, end)."""
    starts = [NEWEST]
    for _ in range(older):
        previous = starts[0] - timedelta(days=1)
        starts.insert(0, previous.replace(day=1))
    ends = [*starts[1:], datetime(NEWEST.year, NEWEST.month + 1, 1, tzinfo=UTC)]
    return list(zip(starts, ends, strict=True))


def run(older: int, per_month: int, organizations: int, seed_value: int) -> dict:
    rng = random.Random(seed_value)
    spans = months(older)
    workloads, nodes = fixtures(organizations=organizations, since=spans[0][0])
    placed = 0
    for since, until in spans:
        placed += placements_add(
            workloads, nodes, placements=per_month, since=since, until=until, rng=rng
        )
        if since == NEWEST:
            break  # timed below
        services.usage_intervals_sync()
        services.usage_rate(now=until + timedelta(days=1))
        services.invoices_draft_month(year=since.year, month=since.month)
    sync_s, _ = timed(services.usage_intervals_sync)
    rate_s, records = timed(lambda: services.usage_rate(now=until + timedelta(days=1)))
    invoice_s, _ = timed(lambda: services.invoices_draft_month(year=since.year, month=since.month))
    billed = BillingRecord.objects.aggregate(total=Sum("quantity_seconds"))["total"]
    return {
        "older_months": older,
        "intervals_per_month": per_month,
        "intervals_present": UsageInterval.objects.count(),
        "records_present": BillingRecord.objects.count(),
        "organizations": organizations,
        "sync_s": sync_s,
        "rate_s": rate_s,
        "invoices_s": invoice_s,
        "records": records,
        "total_s": round(sync_s + rate_s + invoice_s, 2),
        "seconds_equal": billed == placed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--older", default="1,6", help="older months present, comma-separated")
    parser.add_argument("--per-month", type=int, default=100_000, help="placements a month")
    parser.add_argument(
        "--connections", type=int, default=2, help="PORTAL_METER_CONNECTIONS (PostgreSQL)"
    )
    database_arguments(parser)
    args = parser.parse_args()
    settings.PORTAL_METER_CONNECTIONS = args.connections
    on_test_databases(
        "metering_months",
        (
            partial(run, int(older), args.per_month, args.organizations, args.seed)
            for older in args.older.split(",")
        ),
        record=not args.no_results,
        connections=args.connections,
    )


if __name__ == "__main__":
    main()
