"""The capacity calendar at scale: 14 days of hours on 1,000 nodes x 8 GPUs.

Synthetic, seeded: 4 pools of 250 nodes in racks of 10, most GPUs held by
running work (1 to 8 GPUs each, ending within 14 days, a tenth without a max runtime), 400
reservations of 1 to 64 GPUs over the two weeks. What is timed is what a request for the
calendar runs in the engine: ``capacity_calendar`` from the snapshot, every pool's largest
block per hour on one node and on one rack, and the earliest windows of 8 GPUs on one node for
4 hours. Prints one JSON line; appends it to bench/RESULTS.md unless --no-results.

    nice python bench/capacity_calendar.py
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.results import append_results, calibration_seconds  # noqa: E402
from scheduling.engine import (  # noqa: E402
    NodeState,
    ReplicaPlacement,
    Request,
    Reservation,
    RunningWorkload,
)
from scheduling.engine.calendar import (  # noqa: E402
    NODE,
    capacity_calendar,
    earliest_windows,
)

START = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
POOLS = ("train-a", "train-b", "batch", "serve")
GPU_CLASS = "H100-80GB"
HOURS = 14 * 24


def build(*, nodes: int, reservations: int, seed: int):
    rng = np.random.default_rng(seed)
    states, running = [], []
    for i in range(nodes):
        name = f"node-{i:04d}"
        free = [1000] * 8
        gpu = 0
        while gpu < 6:  # work on the first GPUs, some of the last two idle
            size = int(rng.integers(1, 9 - gpu))
            hours = None if rng.random() < 0.1 else timedelta(hours=float(rng.uniform(0, HOURS)))
            request = Request(
                id=f"w-{i}-{gpu}",
                tenant=f"t{int(rng.integers(100))}",
                project="p",
                tier=1,
                gpu_classes=(GPU_CLASS,),
                submitted_at=START,
                gpus=size,
                max_runtime=hours,
            )
            indices = tuple(range(gpu, gpu + size))
            running.append(
                RunningWorkload(request, GPU_CLASS, (ReplicaPlacement(name, indices, 1000),), START)
            )
            for index in indices:
                free[index] = 0
            gpu += size
        states.append(
            NodeState(
                name=name,
                pool=POOLS[i % len(POOLS)],
                gpu_class=GPU_CLASS,
                gpu_free_milli=tuple(free),
                cpu_free_milli=100_000,
                memory_free_mib=1_000_000,
                topology={"rack": f"rack-{i // 10}"},
            )
        )
    held = []
    for k in range(reservations):
        starts_at = START + timedelta(hours=int(rng.integers(0, HOURS)))
        held.append(
            Reservation(
                id=f"r{k}",
                tenant="t0",
                gpu_class=GPU_CLASS,
                gpus=int(rng.integers(1, 65)),
                pool=POOLS[k % len(POOLS)],
                starts_at=starts_at,
                ends_at=starts_at + timedelta(hours=int(rng.integers(1, 48))),
            )
        )
    return states, running, held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1_000)
    parser.add_argument("--reservations", type=int, default=400)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--repeat", type=int, default=5, help="runs timed; the median counts")
    parser.add_argument("--no-results", action="store_true", help="do not touch RESULTS.md")
    args = parser.parse_args()
    nodes, running, reservations = build(
        nodes=args.nodes, reservations=args.reservations, seed=args.seed
    )
    runs, found = [], None
    for _ in range(args.repeat):
        started = time.perf_counter()
        pools = capacity_calendar(
            nodes=nodes,
            running=running,
            reservations=reservations,
            start=START,
            hours=HOURS,
            levels=("rack",),
        )
        for pool in pools:
            pool.largest_block(NODE)
            pool.largest_block("rack")
        windows = earliest_windows(pools, gpus=8, level=NODE, length=4, count=3)
        runs.append(time.perf_counter() - started)
        first = [w.starts_at.isoformat() for w in windows]
        assert found in (None, first), "the same input gave other windows"
        found = first
    line = {
        "bench": "capacity_calendar",
        "nodes": args.nodes,
        "gpus": 8 * args.nodes,
        "running": len(running),
        "reservations": len(reservations),
        "hours": HOURS,
        "median_ms": round(statistics.median(runs) * 1000, 1),
        "max_ms": round(max(runs) * 1000, 1),
        "first_windows": found,
        "calibration_s": calibration_seconds(),
    }
    print(json.dumps(line))
    if not args.no_results:
        append_results(bench="capacity_calendar", argv=sys.argv, figures=line)


if __name__ == "__main__":
    main()
