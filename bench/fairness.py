"""Fairness over time: a multi-tenant day of the Alibaba trace's pods, decay off and on.

Four tenants of weights 1, 1, 2 and 4 share 32 GPUs (the trace's first four 8-GPU G2 nodes).
Each asks, over the day, 130% of its entitled share (its weight over the sum of weights) of the
cluster's GPU-hours, in bursts that arrive within an hour: acme at midnight and noon, globex at
04:00, initech at 07:00, umbrella at 09:00. A burst is pods drawn with the seed from the trace's
GPU pods (their CPU, memory, GPUs or GPU share), each running its recorded lifetime clipped to
30 minutes .. 6 hours. Every tenant may borrow the whole cluster (no guarantees, one pool), so
fair share alone splits it, and fair-share reclaim evicts. The engine's discrete-event
simulation (``scheduling.engine.simulation``) replays the day once with the half-life 0 (only
what runs now counts) and once with it on, weighing decayed usage as the portal's cycle does.

Reported per run: per tenant, its delivered share of the GPU-seconds (cumulative, every 3 hours
and over the day) against its entitled share, Jain's index of delivered over entitled (1 when
every tenant gets exactly its entitlement), wait times (submission to first start: median and
90th percentile, minutes) and evictions. Prints one JSON line; appends to bench/RESULTS.md unless
--no-results.

    nice python bench/fairness.py
"""

from __future__ import annotations

import argparse
import csv
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
from bench.trace_replay import read_nodes  # noqa: E402
from scheduling.engine import ClusterSnapshot, Policy, Quota, Request  # noqa: E402
from scheduling.engine.fairness import UsageDecay  # noqa: E402
from scheduling.engine.simulation import Arrival, Simulation, simulate  # noqa: E402

TRACE = REPO.parent / "shared" / "traces" / "alibaba-gpu-v2023"
START = datetime(2026, 3, 2, tzinfo=UTC)
DAY = timedelta(days=1)
GPU_CLASS = "G2"
# name, weight, the hours its bursts start at
TENANTS = (
    ("acme", 1.0, (0, 12)),
    ("globex", 1.0, (4,)),
    ("initech", 2.0, (7,)),
    ("umbrella", 4.0, (9,)),
)
DEMAND = 1.3  # of each tenant's entitled GPU-hours
SHORTEST, LONGEST = timedelta(minutes=30), timedelta(hours=6)


def gpu_pods(path: Path) -> list[dict]:
    """The trace's pods that ask for GPUs, with their recorded lifetime."""
    with path.open(newline="") as handle:
        return [
            {
                "cpu_milli": int(row["cpu_milli"]),
                "memory_mib": int(row["memory_mib"]),
                "gpus": int(row["num_gpu"]),
                "gpu_milli": int(row["gpu_milli"]),
                "seconds": int(row["deletion_time"]) - int(row["creation_time"]),
            }
            for row in csv.DictReader(handle)
            if int(row["num_gpu"]) and int(row["deletion_time"]) > int(row["creation_time"])
        ]


def pod_gpu_hours(pod: dict, runtime: timedelta) -> float:
    return pod["gpus"] * pod["gpu_milli"] / 1000 * runtime.total_seconds() / 3600


def arrivals(*, pods: list[dict], gpus: int, rng: np.random.Generator) -> list[Arrival]:
    total_weight = sum(weight for _, weight, _ in TENANTS)
    made: list[Arrival] = []
    for tenant, weight, bursts in TENANTS:
        per_burst = DEMAND * weight / total_weight * gpus * 24 / len(bursts)
        for hour in bursts:
            asked = 0.0
            while asked < per_burst:
                pod = pods[int(rng.integers(len(pods)))]
                runtime = min(max(timedelta(seconds=pod["seconds"]), SHORTEST), LONGEST)
                whole = pod["gpu_milli"] >= 1000
                made.append(
                    Arrival(
                        request=Request(
                            id=f"{tenant}-{len(made):05d}",
                            tenant=tenant,
                            project="main",
                            tier=1,
                            gpu_classes=(GPU_CLASS,),
                            submitted_at=START
                            + timedelta(hours=hour, seconds=int(rng.integers(3600))),
                            gpus=pod["gpus"] if whole else 0,
                            gpu_milli=0 if whole else pod["gpu_milli"],
                            cpu_milli=pod["cpu_milli"],
                            memory_mib=pod["memory_mib"],
                            max_runtime=runtime,
                        ),
                        runtime=runtime,
                    )
                )
                asked += pod_gpu_hours(pod, runtime)
    return made


def jain(values: list[float]) -> float:
    return sum(values) ** 2 / (len(values) * sum(v * v for v in values))


def report(simulation: Simulation, tenant_of: dict[str, str], waits_from: dict) -> dict:
    total_weight = sum(weight for _, weight, _ in TENANTS)
    entitled = {tenant: weight / total_weight for tenant, weight, _ in TENANTS}

    def delivered(until: datetime) -> dict[str, float]:
        held = dict.fromkeys(entitled, 0.0)
        for stint in simulation.stints:
            end = min(stint.ended_at, until)
            if end > stint.started_at:
                seconds = (end - stint.started_at).total_seconds()
                held[tenant_of[stint.request_id]] += stint.gpu_milli / 1000 * seconds
        total = sum(held.values()) or 1.0
        return {tenant: gpu_seconds / total for tenant, gpu_seconds in held.items()}

    over_time = []
    for hours in range(3, 25, 3):
        shares = delivered(START + timedelta(hours=hours))
        over_time.append(
            {
                "hour": hours,
                "delivered": {t: round(s, 3) for t, s in shares.items()},
                "jain": round(jain([shares[t] / entitled[t] for t in entitled]), 4),
            }
        )
    day = delivered(START + DAY)
    waits: dict[str, list[float]] = {tenant: [] for tenant in entitled}
    for request_id, started in simulation.first_starts.items():
        minutes = (started - waits_from[request_id]).total_seconds() / 60
        waits[tenant_of[request_id]].append(minutes)
    return {
        "jain_day": round(jain([day[t] / entitled[t] for t in entitled]), 4),
        "tenants": {
            tenant: {
                "weight": weight,
                "entitled": round(entitled[tenant], 3),
                "delivered_day": round(day[tenant], 3),
                "wait_median_min": round(statistics.median(waits[tenant] or [0]), 1),
                "wait_p90_min": round(
                    float(np.percentile(waits[tenant], 90)) if waits[tenant] else 0.0, 1
                ),
                "started": len(waits[tenant]),
            }
            for tenant, weight, _ in TENANTS
        },
        "over_time": over_time,
        "evictions": len(simulation.evictions),
        "cycles": simulation.cycles,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4, help="8-GPU G2 nodes of the trace")
    parser.add_argument("--half-life-hours", type=float, default=168.0)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--no-results", action="store_true", help="do not touch RESULTS.md")
    args = parser.parse_args()

    nodes = [
        n
        for n in read_nodes(TRACE / "openb_node_list_gpu_node.csv")
        if n.gpu_class == GPU_CLASS and len(n.gpu_free_milli) == 8
    ][: args.nodes]
    gpus = 8 * len(nodes)
    work = arrivals(
        pods=gpu_pods(TRACE / "openb_pod_list_default.csv"),
        gpus=gpus,
        rng=np.random.default_rng(args.seed),
    )
    quotas = tuple(
        Quota(
            tenant=tenant,
            gpu_class=GPU_CLASS,
            guarantee=0,
            limit=gpus * scale,
            shared=shared,
        )
        for tenant, _, _ in TENANTS
        for shared, scale in ((False, 1), (True, 1000))
    )
    snapshot = ClusterSnapshot(
        nodes=tuple(nodes),
        quotas=quotas,
        tenant_weights={tenant: weight for tenant, weight, _ in TENANTS},
    )
    tenant_of = {a.request.id: a.request.tenant for a in work}
    submitted = {a.request.id: a.request.submitted_at for a in work}
    runs, seconds = {}, {}
    for name, hours in (("off", 0.0), ("on", args.half_life_hours)):
        started = time.perf_counter()
        simulation = simulate(
            snapshot=snapshot,
            arrivals=work,
            policy=Policy(placement="bestfit", seed=args.seed),
            until=START + DAY,
            decay=UsageDecay(half_life=timedelta(hours=hours)),
        )
        seconds[name] = round(time.perf_counter() - started, 1)
        runs[name] = report(simulation, tenant_of, submitted)
    line = {
        "bench": "fairness",
        "calibration_s": calibration_seconds(),
        "gpus": gpus,
        "arrivals": len(work),
        "demand_gpu_hours": round(
            sum(
                (a.request.gpus or a.request.gpu_milli / 1000) * a.runtime.total_seconds() / 3600
                for a in work
            ),
            1,
        ),
        "half_life_hours": args.half_life_hours,
        "jain_day_off": runs["off"]["jain_day"],
        "jain_day_on": runs["on"]["jain_day"],
        "seconds": seconds,
        "off": runs["off"],
        "on": runs["on"],
    }
    print(json.dumps(line))
    if not args.no_results:
        append_results(bench="fairness", argv=sys.argv, figures=line)


if __name__ == "__main__":
    main()
