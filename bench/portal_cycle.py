"""The whole portal scheduling cycle on a database: 10,000 pending workloads, 1,000 nodes x 8 GPUs.

What is timed is `scheduling_cycle_run()`, as the worker runs it: loading the snapshot from the
database (nodes, placements, quotas, running and pending workloads), converting it, the engine,
and persisting admissions, placements, preemptions and pending reasons in one transaction. The
data mirror bench/scheduler_scale.py (same generator, same seed): 4 pools of 250 nodes in racks of
10, 100 organizations in one cohort, 3 tiers, gangs of 1-16 replicas, a quarter of the cluster
running. It runs in a test database made for the run (`test_<name>` of DATABASE_URL) and
dropped after; each repeat rolls its decisions back, so every cycle starts from the same state.
Two figures: the first cycle over the new queue (every waiting workload gets its first reason,
a quarter of the cluster is preempted), and the next one, after the first was kept (what beat
runs every few seconds: few reasons change).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/portal nice python bench/portal_cycle.py
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings.test")

import django  # noqa: E402

django.setup()

from django.db import connection, transaction  # noqa: E402
from django.test.utils import CaptureQueriesContext, setup_test_environment  # noqa: E402

from bench.results import append_results, calibration_seconds  # noqa: E402
from bench.scheduler_scale import GPU_CLASS, NOW, build  # noqa: E402
from scheduling import services  # noqa: E402
from scheduling.engine import Policy  # noqa: E402
from scheduling.models import (  # noqa: E402
    GpuClass,
    Node,
    NodePool,
    Placement,
    PriorityTier,
    QuotaGrant,
    Workload,
)
from tenants.models import Organization, Project  # noqa: E402


class RolledBack(Exception):
    """Raised to undo a timed cycle's writes."""


def seed(*, nodes: int, pending: int, tenants: int, seed: int) -> dict:
    """The scheduler_scale input as database rows; what was made, counted."""
    snapshot, requests, running = build(nodes=nodes, pending=pending, tenants=tenants, seed=seed)
    h100 = GpuClass.objects.create(
        name=GPU_CLASS, memory_gib=80, products=["NVIDIA-H100-80GB-HBM3"]
    )
    tiers = [
        PriorityTier.objects.create(name=name, value=value, preemptible=value < 2)
        for value, name in enumerate(("batch", "training", "production"))
    ]
    pools = {
        name: NodePool.objects.create(
            name=name, gpu_class=h100, purpose="training", topology_keys=["rack", "block"]
        )
        for name in sorted({state.pool for state in snapshot.nodes})
    }
    node_rows = Node.objects.bulk_create(
        Node(
            name=state.name,
            pool=pools[state.pool],
            gpu_count=8,
            cpu_milli=224_000,
            memory_mib=2_000_000,
            topology=dict(state.topology),
            labels={},
            ready=True,
            last_seen_at=NOW,
        )
        for state in snapshot.nodes
    )
    nodes_by_name = {node.name: node for node in node_rows}
    organizations = {
        tenant: Organization.objects.create(slug=tenant, name=tenant)
        for tenant in sorted({quota.tenant for quota in snapshot.quotas})  # two quotas each
    }
    projects = {
        slug: Project.objects.create(
            organization=organization, slug="main", name="main", namespace=f"{slug}-main"
        )
        for slug, organization in organizations.items()
    }
    QuotaGrant.objects.bulk_create(
        QuotaGrant(
            organization=organizations[quota.tenant],
            gpu_class=h100,
            resource=QuotaGrant.Resource.SHARED if quota.shared else QuotaGrant.Resource.GPUS,
            guarantee=quota.guarantee,
            limit=quota.limit,
            cohort=quota.cohort,
        )
        for quota in snapshot.quotas
    )

    def workload(request, **fields) -> Workload:
        return Workload(
            project=projects[request.tenant],
            tier=tiers[request.tier],
            preemptible=tiers[request.tier].preemptible,
            name=request.id,
            kind=Workload.Kind.TRAINING,
            image="nvcr.io/nvidia/pytorch:25.01-py3",
            gpu_classes=list(request.gpu_classes),
            gpus=request.gpus,
            gpu_milli=request.gpu_milli,
            replicas=request.replicas,
            cpu_milli=request.cpu_milli,
            memory_mib=request.memory_mib,
            max_runtime=request.max_runtime,
            submitted_at=request.submitted_at,
            **fields,
        )

    active = Workload.objects.bulk_create(
        workload(
            item.request,
            state=Workload.State.RUNNING,
            gpu_class=h100,
            admitted_at=item.started_at,
            launched_at=item.started_at,
            started_at=item.started_at,
        )
        for item in running
    )
    Placement.objects.bulk_create(
        Placement(
            workload=row,
            replica=index,
            node=nodes_by_name[placement.node],
            gpu_indices=list(placement.gpu_indices),
            gpu_milli=placement.gpu_milli,
            cpu_milli=placement.cpu_milli,
            memory_mib=placement.memory_mib,
            started_at=item.started_at,
        )
        for row, item in zip(active, running, strict=True)
        for index, placement in enumerate(item.placements)
    )
    Workload.objects.bulk_create((workload(request) for request in requests), batch_size=2_000)
    return {"nodes": len(node_rows), "running": len(active), "pending": len(requests)}


def timed_cycle(policy: str, profiler: cProfile.Profile | None = None):
    """One cycle's wall and CPU seconds and result; its writes are rolled back."""
    outcome = {}
    try:
        with transaction.atomic():
            wall, cpu = time.perf_counter(), time.process_time()
            if profiler:
                profiler.enable()
            with CaptureQueriesContext(connection) as queries:
                outcome["result"] = services.scheduling_cycle_run(policy=Policy(placement=policy))
            if profiler:
                profiler.disable()
            outcome["queries"] = len(queries)
            outcome["wall"] = time.perf_counter() - wall
            outcome["cpu"] = time.process_time() - cpu
            raise RolledBack
    except RolledBack:
        pass
    return outcome["wall"], outcome["cpu"], outcome["result"], outcome["queries"]


def figures(name: str, runs) -> dict:
    """The median of timed cycles, and what the first of them decided."""
    walls = [wall for wall, *_ in runs]
    _, _, result, queries = runs[0]
    return {
        f"{name}_cycle_seconds": round(statistics.median(walls), 3),
        f"{name}_cycle_seconds_runs": [round(wall, 3) for wall in walls],
        f"{name}_cpu_seconds": round(statistics.median(cpu for _, cpu, *_ in runs), 3),
        f"{name}_queries": queries,
        f"{name}_admitted": len(result.admitted),
        f"{name}_preempted": len(result.preempted),
        f"{name}_still_pending": result.pending,
    }


def scale_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The size of the seeded cluster and queue, and the policy (what_if.py's too)."""
    parser.add_argument("--nodes", type=int, default=1_000)
    parser.add_argument("--pending", type=int, default=10_000)
    parser.add_argument("--tenants", type=int, default=100)
    parser.add_argument("--policy", default="fgd_cpu_waste_demand")
    parser.add_argument("--seed", type=int, default=42)
    return parser


def main() -> None:
    parser = scale_arguments(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    parser.add_argument("--repeat", type=int, default=3, help="cycles timed; the median counts")
    parser.add_argument("--no-results", action="store_true", help="do not touch RESULTS.md")
    parser.add_argument(
        "--profile", type=int, default=0, help="print the N costliest calls of a next cycle"
    )
    args = parser.parse_args()

    setup_test_environment()
    database = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        made = seed(nodes=args.nodes, pending=args.pending, tenants=args.tenants, seed=args.seed)
        profiler = cProfile.Profile() if args.profile else None
        first = [timed_cycle(args.policy) for _ in range(args.repeat)]
        services.scheduling_cycle_run(policy=Policy(placement=args.policy))  # kept
        steady = [
            timed_cycle(args.policy, profiler if n == 0 else None) for n in range(args.repeat)
        ]
        if profiler:
            pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(
                args.profile
            )
    finally:
        connection.creation.destroy_test_db(database, verbosity=0)
    line = {
        "bench": "portal_cycle",
        "calibration_s": calibration_seconds(),
        "database": connection.vendor,
        **made,
        "policy": args.policy,
        **figures("first", first),
        **figures("next", steady),
    }
    print(json.dumps(line))
    if not args.no_results:
        append_results(bench="portal_cycle", argv=sys.argv, figures=line)


if __name__ == "__main__":
    main()
