"""A submission's what-if at scale: 1,000 nodes x 8 GPUs, 10,000 pending workloads, on a database.

What is timed is `services.workloads_what_if(...)` as the API view calls it: the submission's
checks (permission, catalog, quota limits, the other apps' checks such as a budget), the state
the last cycle kept (read once per process after each cycle), the engine's what-if for the
request, and its price. The data are bench/portal_cycle.py's (the same generator and seed); one
real cycle runs first and keeps its state. Each repeat asks for another request (tier, tenant,
size drawn from a seeded generator). Figures: p50 and p95 of those, the first what-if after
the cycle (it reads and unpickles the kept state), and one answered from a fresh read of the
cluster (what happens when the kept state is stale). It runs in a test database made for the
run (`test_<name>` of DATABASE_URL) and dropped after.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/portal nice python bench/what_if.py
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
from datetime import timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings.test")

import numpy as np  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

from bench.portal_cycle import scale_arguments, seed  # noqa: E402 (sets Django up)
from bench.results import append_results, calibration_seconds  # noqa: E402
from bench.scheduler_scale import GPU_CLASS  # noqa: E402
from scheduling import services  # noqa: E402
from scheduling.engine import Policy  # noqa: E402
from scheduling.models import CycleEndState  # noqa: E402
from tenants.models import Membership, Project  # noqa: E402
from tenants.permissions import Caller  # noqa: E402

TIERS = ("batch", "training", "production")


def probes(count: int, seed_value: int) -> list[tuple[Project, services.WorkloadRequest]]:
    """Requests of random tenants, tiers and sizes, each with the project it goes to."""
    rng = np.random.default_rng(seed_value)
    projects = list(Project.objects.select_related("organization").order_by("pk"))
    made = []
    for n in range(count):
        project = projects[int(rng.integers(len(projects)))]
        request = services.WorkloadRequest(
            name=f"probe-{n}",
            kind="training",
            tier=TIERS[int(rng.integers(len(TIERS)))],
            image="nvcr.io/nvidia/pytorch:25.01-py3",
            gpu_classes=(GPU_CLASS,),
            gpus=int(rng.choice([1, 2, 4, 8])),
            replicas=int(rng.integers(1, 5)),
            max_runtime=timedelta(hours=int(rng.integers(1, 24))),
        )
        made.append((project, request))
    return made


def member_of_every_organization():
    user = get_user_model().objects.create_user("bench", email="bench@example.com")
    Membership.objects.bulk_create(
        Membership(organization=project.organization, user=user, role="member")
        for project in Project.objects.select_related("organization")
    )
    return Caller(user=user)


def timed(caller, project, request) -> tuple[float, str]:
    started = time.perf_counter()
    report = services.workloads_what_if(caller=caller, project=project, requests=[request])
    return time.perf_counter() - started, report.workloads[0].outcome


def main() -> None:
    parser = scale_arguments(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    parser.add_argument("--repeat", type=int, default=200, help="what-ifs timed")
    parser.add_argument("--no-results", action="store_true", help="do not touch RESULTS.md")
    parser.add_argument("--profile", type=int, default=0, help="print the N costliest calls")
    args = parser.parse_args()

    setup_test_environment()
    database = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        made = seed(nodes=args.nodes, pending=args.pending, tenants=args.tenants, seed=args.seed)
        caller = member_of_every_organization()
        cycle = services.scheduling_cycle_run(policy=Policy(placement=args.policy))
        kept_bytes = len(CycleEndState.objects.values_list("state", flat=True).get())
        asked = probes(args.repeat + 2, args.seed)
        first, _ = timed(caller, *asked[0])
        profiler = cProfile.Profile() if args.profile else None
        if profiler:
            profiler.enable()
        runs = [timed(caller, project, request) for project, request in asked[1:-1]]
        if profiler:
            profiler.disable()
            stats = pstats.Stats(profiler, stream=sys.stderr)
            stats.sort_stats("cumulative").print_stats(args.profile)
        CycleEndState.objects.all().delete()  # no kept state: a fresh read of the cluster
        fresh, _ = timed(caller, *asked[-1])
    finally:
        connection.creation.destroy_test_db(database, verbosity=0)
    seconds = sorted(wall for wall, _ in runs)
    outcomes = [outcome for _, outcome in runs]
    line = {
        "bench": "what_if",
        "calibration_s": calibration_seconds(),
        "database": connection.vendor,
        **made,
        "policy": args.policy,
        "cycle_seconds": round(cycle.milliseconds / 1000, 3),
        "kept_state_bytes": kept_bytes,
        "what_ifs": len(runs),
        "p50_ms": round(statistics.median(seconds) * 1000, 1),
        "p95_ms": round(seconds[int(len(seconds) * 0.95) - 1] * 1000, 1),
        "max_ms": round(seconds[-1] * 1000, 1),
        "first_after_cycle_ms": round(first * 1000, 1),
        "fresh_snapshot_ms": round(fresh * 1000, 1),
        "admitted": outcomes.count("admitted"),
        "waits": outcomes.count("waits"),
        "refused": outcomes.count("refused"),
    }
    print(json.dumps(line))
    if not args.no_results:
        append_results(bench="what_if", argv=sys.argv, figures=line)


if __name__ == "__main__":
    main()
