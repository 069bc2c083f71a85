"""One full admission cycle at scale: 10,000 pending gangs on 1,000 nodes x 8 GPUs.

Synthetic, seeded: 4 pools of 250 nodes in racks of 10, 100 tenants in one cohort with
quotas, 3 tiers, gangs of 1-16 replicas of 1, 2, 4 or 8 GPUs (or a GPU share), a quarter of
the cluster already running. Prints one JSON line; appends it to bench/RESULTS.md unless
--no-results.

What is timed is one whole ``schedule`` call from the snapshot and the queue to the
decisions: the engine builds its numpy view of the nodes, the quota ledger, topology
domains, eligibility and the workload mix inside it, then orders, admits, preempts and
explains. Only generating the synthetic input (what Django loads from the database) is
outside. The cycle runs ``--repeat`` times on the same input (each from scratch); the
figures are the median, and every run must give the same decisions.

    nice python bench/scheduler_scale.py
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.results import append_results, calibration_seconds  # noqa: E402
from scheduling.engine import (  # noqa: E402
    ClusterSnapshot,
    NodeState,
    Policy,
    Quota,
    ReplicaPlacement,
    Request,
    RunningWorkload,
    RuntimeSamples,
    schedule,
)

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
POOLS = ("train-a", "train-b", "batch", "serve")
GPU_CLASS = "H100-80GB"


def build(*, nodes: int, pending: int, tenants: int, seed: int):
    rng = np.random.default_rng(seed)
    busy_nodes = nodes // 4
    node_states = []
    running = []
    for i in range(nodes):
        name = f"node-{i:04d}"
        busy = i < busy_nodes
        node_states.append(
            NodeState(
                name=name,
                pool=POOLS[i * len(POOLS) // nodes],
                gpu_class=GPU_CLASS,
                gpu_free_milli=(0,) * 8 if busy else (1000,) * 8,
                cpu_free_milli=(224_000 - 64_000) if busy else 224_000,
                memory_free_mib=(2_000_000 - 512_000) if busy else 2_000_000,
                topology={"rack": f"rack-{i // 10:03d}", "block": f"block-{i // 100:02d}"},
            )
        )
        if busy:
            owner = f"tenant-{i % tenants:03d}"
            running.append(
                RunningWorkload(
                    request=Request(
                        id=f"running-{i}",
                        tenant=owner,
                        project="main",
                        tier=0,
                        gpu_classes=(GPU_CLASS,),
                        submitted_at=NOW - timedelta(hours=3),
                        gpus=8,
                        cpu_milli=64_000,
                        memory_mib=512_000,
                        max_runtime=timedelta(hours=int(rng.integers(4, 48))),
                    ),
                    gpu_class=GPU_CLASS,
                    placements=(
                        ReplicaPlacement(
                            node=name,
                            gpu_indices=tuple(range(8)),
                            gpu_milli=1000,
                            cpu_milli=64_000,
                            memory_mib=512_000,
                        ),
                    ),
                    started_at=NOW - timedelta(hours=2),
                )
            )
    guarantee = nodes * 8 // tenants
    # Whole GPUs, and GPU shares in milli-GPU as much.
    quotas = tuple(
        Quota(
            tenant=f"tenant-{t:03d}",
            gpu_class=GPU_CLASS,
            guarantee=guarantee * scale,
            limit=guarantee * 4 * scale,
            cohort="everyone",
            shared=shared,
        )
        for t in range(tenants)
        for shared, scale in ((False, 1), (True, 1000))
    )
    requests = []
    for i in range(pending):
        shared = rng.random() < 0.15
        requests.append(
            Request(
                id=f"pending-{i:05d}",
                tenant=f"tenant-{int(rng.integers(tenants)):03d}",
                project="main",
                tier=int(rng.integers(3)),
                gpu_classes=(GPU_CLASS,),
                submitted_at=NOW - timedelta(seconds=int(rng.integers(86_400))),
                gpus=0 if shared else int(rng.choice([1, 2, 4, 8])),
                gpu_milli=int(rng.choice([250, 500])) if shared else 0,
                replicas=int(rng.integers(1, 17)),
                cpu_milli=int(rng.choice([4_000, 8_000, 16_000])),
                memory_mib=int(rng.choice([32_000, 64_000, 128_000])),
                max_runtime=timedelta(hours=int(rng.integers(1, 24))),
            )
        )
    snapshot = ClusterSnapshot(nodes=tuple(node_states), quotas=quotas)
    return snapshot, requests, running


def runtime_samples(
    *, pending: list[Request], running: list[RunningWorkload], tenants: int, seed: int
) -> RuntimeSamples:
    """What the portal passes for the start estimates: 200 finished run times per tenant
    (log-normal around 6 hours), every workload in its tenant's bucket."""
    rng = np.random.default_rng(seed)
    buckets = {
        f"tenant-{t:03d}": tuple(np.sort(rng.lognormal(np.log(6 * 3600), 0.8, 200)).tolist())
        for t in range(tenants)
    }
    work = [*pending, *(w.request for w in running)]
    return RuntimeSamples(buckets=buckets, bucket_of={r.id: r.tenant for r in work}, seed=seed)


def state_arguments(description: str) -> argparse.ArgumentParser:
    """A parser of what ``build`` and the policy take: the benchmarks on this state share it."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--nodes", type=int, default=1_000)
    parser.add_argument("--pending", type=int, default=10_000)
    parser.add_argument("--tenants", type=int, default=100)
    parser.add_argument("--policy", default="fgd_small_first")
    parser.add_argument("--seed", type=int, default=42)
    return parser


def main() -> None:
    parser = state_arguments(__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="cycles timed; the median counts")
    parser.add_argument("--no-results", action="store_true", help="do not touch RESULTS.md")
    parser.add_argument(
        "--no-runtime-samples",
        action="store_true",
        help="estimates from max runtimes only (one draw), as before the ranges",
    )
    parser.add_argument(
        "--decayed-usage",
        action="store_true",
        help="every tenant with a decayed past usage (fairness over time), as the portal passes",
    )
    args = parser.parse_args()

    snapshot, pending, running = build(
        nodes=args.nodes, pending=args.pending, tenants=args.tenants, seed=args.seed
    )
    if not args.no_runtime_samples:
        samples = runtime_samples(
            pending=pending, running=running, tenants=args.tenants, seed=args.seed
        )
        snapshot = replace(snapshot, runtimes=samples)
    if args.decayed_usage:
        rng = np.random.default_rng(args.seed)
        usage = {f"tenant-{t:03d}": float(rng.exponential(0.01)) for t in range(args.tenants)}
        snapshot = replace(snapshot, tenant_usage=usage)
    walls, cpus, outcomes = [], [], []
    for _ in range(args.repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        outcomes.append(
            schedule(
                snapshot=snapshot,
                pending=pending,
                running=running,
                now=NOW,
                policy=Policy(placement=args.policy, seed=args.seed),
            )
        )
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    decisions = outcomes[0]
    if any(other != decisions for other in outcomes[1:]):
        raise SystemExit("the same input gave different decisions")
    seconds = statistics.median(walls)
    placed = sum(len(a.placements) for a in decisions.admissions)
    line = {
        "bench": "scheduler_scale",
        "calibration_s": calibration_seconds(),
        "nodes": args.nodes,
        "gpus": args.nodes * 8,
        "pending": args.pending,
        "running": len(running),
        "tenants": args.tenants,
        "policy": args.policy,
        "runtime_samples": not args.no_runtime_samples,
        "decayed_usage": args.decayed_usage,
        "cycle_seconds": round(seconds, 3),
        "cycle_seconds_runs": [round(w, 3) for w in walls],
        "cpu_seconds": round(statistics.median(cpus), 3),
        "decisions_per_s": round(args.pending / seconds, 1),
        "admitted": len(decisions.admissions),
        "replicas_placed": placed,
        "placements_per_s": round(placed / seconds, 1),
        "preemptions": len(decisions.preemptions),
        "still_pending": len(decisions.pending),
    }
    print(json.dumps(line))
    if not args.no_results:
        append_results(bench="scheduler_scale", argv=sys.argv, figures=line)


if __name__ == "__main__":
    main()
