"""The whole portal scheduling cycle on a database: 10,000 pending workloads, 1,000 nodes x 8 GPUs.

What is timed is `scheduling_cycle_run()`, as the worker runs it: loading the snapshot from the
database (nodes, placements, quotas, running and pending workloads), converting it, the engine,
and persisting admissions, placements, preemptions and pending reasons in one transaction. The
data mirror bench/scheduler_scale.py (same generator, same seed): 4 pools of 250 nodes in racks of
10, 100 organizations in one cohort, 3 tiers, gangs of 1-16 replicas, a quarter of the cluster
running. It runs in a test database made for the run (`test_<name>` of DATABASE_URL) and
dropped after; each repeat rolls its decisions back, so every cycle starts from the same state.
Three figures: the first cycle over the new queue (every waiting workload gets its first reason,
a quarter of the cluster is preempted); the next one, after the first was kept (what beat
runs every few seconds: few reasons change), which decides every request again (the first
admitted and evicted: nothing it decided is parked); and the quiet one, after a next cycle was
kept that admitted and evicted nothing, which reuses the parked answers (scheduling/engine/
parking.py). `--no-parking` decides every request in every cycle: its digests must be the same.

Every run decides the same: workload ids are derived from their names, and the portal's clock is
held at a fixed instant (the first cycles and the kept one at `NOW` + 1 h, the next ones 5 s
later, as beat would run them, and the quiet ones 5 s after those). Each figure comes with the
seconds of its steps (medians): loading (the quota and usage upkeep and the snapshot), the
engine (ordering the queue, deciding each request, of which the victim searches, and explaining
what waits), and writing (the decisions, and the state kept for what-ifs). `--digest` adds a
hash of what the cycles wrote (every workload's state, reason, place and estimates, every
placement and event), so that a change to the cycle can be shown to decide exactly the same.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/portal nice python bench/portal_cycle.py
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import hashlib
import json
import os
import pstats
import statistics
import sys
import time
import uuid
from collections import defaultdict
from contextlib import contextmanager
from datetime import timedelta
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
from portal import clock  # noqa: E402
from scheduling import services  # noqa: E402
from scheduling.engine import Policy  # noqa: E402
from scheduling.engine.preemption import Preemptor  # noqa: E402
from scheduling.engine.schedule import _Cycle  # noqa: E402
from scheduling.models import (  # noqa: E402
    Cluster,
    GpuClass,
    Node,
    NodePool,
    Placement,
    PriorityTier,
    QuotaGrant,
    Workload,
    WorkloadEvent,
)
from scheduling.services import cycle, cycle_parking, cycle_requests  # noqa: E402
from tenants.models import Organization, Project  # noqa: E402

# The instants the cycles run at: the first ones (and the kept one), then the next ones.
FIRST_AT = NOW + timedelta(hours=1)
NEXT_AT = FIRST_AT + timedelta(seconds=5)
QUIET_AT = NEXT_AT + timedelta(seconds=5)
# A cycle's steps, each the callable timed (cumulative: a call inside another counts in both).
STEPS = {
    "loading": (cycle, "quota_increases_apply", "tenant_usage_update", "cycle_inputs"),
    "engine": (cycle, "cycle_decide"),
    "engine_order": (_Cycle, "begin"),
    "engine_decide": (_Cycle, "decide"),
    "engine_preempt": (Preemptor, "preempt_for"),
    "engine_explain": (_Cycle, "_explain"),
    "writing": (cycle, "_persist", "cycle_end_keep"),
}


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
    cluster = Cluster.objects.create(name="bench", region="bench", backend="simulated")
    pools = {
        name: NodePool.objects.create(
            name=name,
            cluster=cluster,
            gpu_class=h100,
            purpose="training",
            topology_keys=["rack", "block"],
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
            # From the name: the same queue order (ids break ties) and messages every run.
            id=uuid.uuid5(uuid.NAMESPACE_DNS, f"{request.id}.portal-cycle.bench"),
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


@contextmanager
def held_clock(at):
    """The portal's clock reads ``at`` while the block runs."""
    now = clock.now
    clock.now = lambda: at
    try:
        yield
    finally:
        clock.now = now


@contextmanager
def step_seconds():
    """Each of STEPS' seconds while the block runs, summed over its calls (a dict, filled)."""
    spent: dict[str, float] = defaultdict(float)
    originals = []

    def timed(step, function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[step] += time.perf_counter() - started

        return wrapper

    for step, (owner, *names) in STEPS.items():
        spent[step] = 0.0
        for name in names:
            function = getattr(owner, name)
            originals.append((owner, name, function))
            setattr(owner, name, timed(step, function))
    try:
        yield spent
    finally:
        for owner, name, function in reversed(originals):
            setattr(owner, name, function)


def decisions_digest() -> str:
    """A hash of what the cycles wrote: every workload's state and queue fields, placements
    and timeline events, by workload name."""
    digest = hashlib.sha256()
    fields = ("name", "state", "gpu_class__name", "borrowed", "preempted_by__name")
    for row in Workload.objects.order_by("name").values_list(*fields, *cycle.PENDING_FIELDS):
        digest.update(repr(row).encode())
    placements = Placement.objects.order_by("workload__name", "replica", "started_at")
    for row in placements.values_list(
        "workload__name",
        "replica",
        "node__name",
        "gpu_indices",
        "gpu_milli",
        "cpu_milli",
        "memory_mib",
        "started_at",
        "ended_at",
    ):
        digest.update(repr(row).encode())
    events = WorkloadEvent.objects.order_by("workload__name", "kind", "message")
    for row in events.values_list("workload__name", "at", "kind", "message", "data"):
        digest.update(repr(row).encode())
    return digest.hexdigest()[:16]


def timed_cycle(
    policy: str,
    profiler: cProfile.Profile | None = None,
    *,
    digest: bool = False,
    parked: bool = True,
):
    """One cycle's wall and CPU seconds, result, statements, steps' seconds and (``digest``)
    the hash of what it wrote; its writes are rolled back. Not ``parked``: it starts with no
    parked answer, as after a cycle that admitted or evicted."""
    outcome = {}
    if not parked:
        cycle_parking.forget()
    try:
        with transaction.atomic(), step_seconds() as steps:
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
            outcome["steps"] = dict(steps)
            outcome["digest"] = decisions_digest() if digest else None
            raise RolledBack
    except RolledBack:
        pass
    return (
        outcome["wall"],
        outcome["cpu"],
        outcome["result"],
        outcome["queries"],
        outcome["steps"],
        outcome["digest"],
    )


def figures(name: str, runs) -> dict:
    """The median of timed cycles, and what the first of them decided."""
    walls = [wall for wall, *_ in runs]
    _, _, result, queries, _, digest = runs[0]
    return {
        f"{name}_cycle_seconds": round(statistics.median(walls), 3),
        f"{name}_cycle_seconds_runs": [round(wall, 3) for wall in walls],
        f"{name}_cpu_seconds": round(statistics.median(cpu for _, cpu, *_ in runs), 3),
        f"{name}_steps_seconds": {
            step: round(statistics.median(run[4][step] for run in runs), 3) for step in STEPS
        },
        f"{name}_queries": queries,
        f"{name}_admitted": len(result.admitted),
        f"{name}_preempted": len(result.preempted),
        f"{name}_still_pending": result.pending,
        **({f"{name}_digest": digest} if digest else {}),
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
    parser.add_argument(
        "--digest", action="store_true", help="print a hash of what the cycles decided"
    )
    parser.add_argument(
        "--no-parking", action="store_true", help="decide every request in every cycle"
    )
    args = parser.parse_args()
    parking = not args.no_parking

    setup_test_environment()
    database = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        made = seed(nodes=args.nodes, pending=args.pending, tenants=args.tenants, seed=args.seed)
        profiler = cProfile.Profile() if args.profile else None
        with held_clock(FIRST_AT):
            first = []
            for _ in range(args.repeat):
                # A first cycle makes every waiting workload's request: none kept from before.
                cycle_requests.forget()
                first.append(timed_cycle(args.policy, digest=args.digest, parked=False))
            services.scheduling_cycle_run(policy=Policy(placement=args.policy))  # kept
        with held_clock(NEXT_AT):
            # Each next cycle as the first after the kept one: none reuses another's answers.
            steady = [
                timed_cycle(args.policy, digest=args.digest, parked=False)
                for _ in range(args.repeat)
            ]
            cycle_parking.forget()
            services.scheduling_cycle_run(policy=Policy(placement=args.policy))  # kept
        with held_clock(QUIET_AT):
            if not parking:
                cycle_parking.forget()
            # The profiled cycle is an extra one: the profiler's cost stays out of the figures.
            if profiler:
                timed_cycle(args.policy, profiler, parked=parking)
            quiet = [
                timed_cycle(args.policy, digest=args.digest, parked=parking)
                for _ in range(args.repeat)
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
        **figures("quiet", quiet),
        "parking": parking,
    }
    print(json.dumps(line))
    if not args.no_results:
        append_results(bench="portal_cycle", argv=sys.argv, figures=line)


if __name__ == "__main__":
    main()
