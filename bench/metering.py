"""Metering at volume: N placements over a month for 100 organizations, turned into usage
intervals, rated into billing records and drafted into invoices, on the database of
DATABASE_URL (a test database made for the run and dropped after).

Placements start anywhere in November 2026 and last as long as the GPU pods of the shared
Alibaba trace did (deletion less scheduling time, drawn at random; median 8 minutes, mean 7.5
hours, so an interval spans about 5 hours' records on average), capped at the month's end.

Prints one JSON line per size: seconds of each step, records written, the peak resident memory
of the process during the metering steps (the seeding's is reset away first), and whether
billed GPU-seconds equal placed GPU-seconds exactly. The issue's target: 1,000,000 intervals
in under 60 s, memory flat as the count grows.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/portal \
        nice python bench/metering.py --sizes 100000,1000000
"""

from __future__ import annotations

import argparse
import csv
import gc
import os
import random
import sys
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings.test")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.db.models import Sum  # noqa: E402

from bench.database_runs import database_arguments, on_test_databases  # noqa: E402
from billing import services  # noqa: E402
from billing.models import BillingRecord, CatalogItem, PriceVersion, UsageInterval  # noqa: E402
from scheduling.models import (  # noqa: E402
    Cluster,
    GpuClass,
    Node,
    NodePool,
    Placement,
    PriorityTier,
    Workload,
)
from tenants.models import Organization, Project  # noqa: E402

MONTH_START = datetime(2026, 11, 1, tzinfo=UTC)
MONTH = timedelta(days=30)
BATCH = 5_000
TRACE = REPO.parent / "shared" / "traces" / "alibaba-gpu-v2023" / "openb_pod_list_default.csv"


def trace_durations() -> list[int]:
    """Seconds each GPU pod of the trace ran (at least one)."""
    with TRACE.open() as rows:
        return [
            max(1, int(row["deletion_time"]) - int(row["scheduled_time"] or row["creation_time"]))
            for row in csv.DictReader(rows)
            if row["deletion_time"] and int(row["num_gpu"]) > 0
        ]


def seed(*, placements: int, organizations: int, seed: int) -> Decimal:
    """The rows: organizations with one project and workload each, placements that ran inside
    the month as long as the trace's pods, an on-demand price with a change mid-month. Returns
    the GPU-seconds placed."""
    workloads, nodes = fixtures(organizations=organizations, since=MONTH_START)
    return placements_add(
        workloads,
        nodes,
        placements=placements,
        since=MONTH_START,
        until=MONTH_START + MONTH,
        rng=random.Random(seed),
    )


def fixtures(*, organizations: int, since: datetime) -> tuple[list[Workload], list[Node]]:
    """One H100 pool of 1,000 nodes, an on-demand H100 price from ``since`` with a change
    fifteen days later, and organizations with one project and workload each: the workloads
    and the nodes."""
    h100 = GpuClass.objects.create(name="H100-80GB", memory_gib=80)
    tier = PriorityTier.objects.create(name="training", value=1, preemptible=True)
    cluster = Cluster.objects.create(name="bench", region="bench", backend="simulated")
    pool = NodePool.objects.create(name="dgx", cluster=cluster, gpu_class=h100, purpose="training")
    nodes = Node.objects.bulk_create(
        Node(name=f"n{i:04d}", pool=pool, gpu_count=8, cpu_milli=224_000, memory_mib=2_000_000)
        for i in range(1_000)
    )
    item = CatalogItem.objects.create(
        slug="h100", name="H100", kind="on_demand", gpu_class=h100, active_from=since
    )
    PriceVersion.objects.bulk_create(
        [
            PriceVersion(item=item, unit_price=Decimal("2.9000"), effective_from=since),
            PriceVersion(item=item, unit_price=Decimal("3.1000"), effective_from=since + MONTH / 2),
        ]
    )
    workloads = []
    for n in range(organizations):
        organization = Organization.objects.create(slug=f"org-{n:03d}", name=f"Org {n}")
        project = Project.objects.create(
            organization=organization, slug="p", name="p", namespace=f"org-{n:03d}-p"
        )
        workloads.append(
            Workload.objects.create(
                project=project,
                name="w",
                kind="training",
                tier=tier,
                gpus=8,
                image="pytorch:latest",
                gpu_class=h100,
                state=Workload.State.SUCCEEDED,
            )
        )
    return workloads, nodes


def placements_add(
    workloads: list[Workload],
    nodes: list[Node],
    *,
    placements: int,
    since: datetime,
    until: datetime,
    rng: random.Random,
) -> Decimal:
    """``placements`` that started in [since, until) and ran as long as the trace's pods,
    capped at ``until``, spread over ``workloads`` and ``nodes``: the GPU-seconds placed."""
    # Their month's partitions (PostgreSQL), as beat makes them ahead of time.
    services.metering_partitions_ensure(now=since)
    durations = trace_durations()
    placed = 0
    for start in range(0, placements, BATCH):
        rows = []
        for n in range(start, min(start + BATCH, placements)):
            running = since + timedelta(seconds=rng.randrange(int((until - since).total_seconds())))
            ended = min(running + timedelta(seconds=rng.choice(durations)), until)
            gpus = rng.choice((1, 2, 4, 8))
            placed += gpus * int((ended - running).total_seconds())
            rows.append(
                Placement(
                    workload=workloads[n % len(workloads)],
                    replica=n % 30_000,
                    node=nodes[n % len(nodes)],
                    gpu_indices=list(range(gpus)),
                    gpu_milli=1000,
                    started_at=running,
                    running_at=running,
                    ended_at=ended,
                )
            )
        Placement.objects.bulk_create(rows)
    return Decimal(placed)


def peak_reset() -> None:
    """Start the process's peak resident memory over from what it holds now (Linux)."""
    Path("/proc/self/clear_refs").write_text("5")


def peak_mib() -> float:
    """The process's peak resident memory since the last reset."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError("no VmHWM in /proc/self/status")


def timed(step) -> tuple[float, object]:
    started = time.perf_counter()
    result = step()
    return round(time.perf_counter() - started, 2), result


def run(size: int, organizations: int, seed_value: int) -> dict:
    placed = seed(placements=size, organizations=organizations, seed=seed_value)
    after = MONTH_START + MONTH + timedelta(days=1)
    gc.collect()
    peak_reset()
    sync_s, _ = timed(services.usage_intervals_sync)
    rate_s, records = timed(lambda: services.usage_rate(now=after))
    invoice_s, _ = timed(lambda: services.invoices_draft_month(year=2026, month=11))
    billed = BillingRecord.objects.aggregate(total=Sum("quantity_seconds"))["total"]
    return {
        "intervals": size,
        "organizations": organizations,
        "sync_s": sync_s,
        "rate_s": rate_s,
        "invoices_s": invoice_s,
        "records": records,
        "total_s": round(sync_s + rate_s + invoice_s, 2),
        "peak_rss_mib": peak_mib(),
        "seconds_equal": billed == placed,
        "gpu_hours": round(placed / 3600),
        **(row_bytes() if connection.vendor == "postgresql" else {}),
    }


def row_bytes() -> dict:
    """Bytes on disk per interval and per record, indexes and every partition included."""
    sizes = {}
    with connection.cursor() as cursor:
        for name, model in (("interval", UsageInterval), ("record", BillingRecord)):
            # pg_partition_tree has no rows for a table that is not partitioned.
            cursor.execute(
                "SELECT COALESCE(sum(pg_total_relation_size(relid)),"
                " pg_total_relation_size(%s::regclass)) FROM pg_partition_tree(%s)",
                [model._meta.db_table, model._meta.db_table],
            )
            sizes[f"{name}_bytes"] = round(cursor.fetchone()[0] / model.objects.count())
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="placements, comma-separated")
    parser.add_argument(
        "--connections", type=int, default=2, help="PORTAL_METER_CONNECTIONS (PostgreSQL)"
    )
    database_arguments(parser)
    args = parser.parse_args()
    settings.PORTAL_METER_CONNECTIONS = args.connections
    on_test_databases(
        "metering",
        (partial(run, int(size), args.organizations, args.seed) for size in args.sizes.split(",")),
        record=not args.no_results,
        connections=args.connections,
    )


if __name__ == "__main__":
    main()
