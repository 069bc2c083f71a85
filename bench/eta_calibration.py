"""How good the start estimates are: the Alibaba GPU trace replayed through the portal's engine,
an estimate made for every pod when it is submitted, judged against when it actually starts.

The trace (../shared/traces/alibaba-gpu-v2023, see bench/trace_replay.py) gives each pod its
submission (creation_time), its run time (deletion_time - scheduled_time) and its request. The
replay runs ``schedule`` at every arrival and every end, on a share of the trace's GPU nodes and
with the arrivals' times compressed so that work queues (the trace's own cluster was seldom
full). Pods are the work of one tenant; the pod's QoS class is its kind. Nobody declared a max
runtime in the trace: each pod gets the first of a ladder of limits people pick (15 min, 1 h,
4 h, 12 h, 1 d, 3 d, 7 d, 30 d, 180 d) that its run fits in.

The first cycle after a pod arrives that leaves it waiting gives its estimate twice, from the
same state: today's point (max runtimes only) and the range (running work's remaining time drawn
from the runs of the latest finished pods, as the portal's cycle passes them). A pod started in
its first cycle has no estimate; one that never starts within the replay is not judged.
Prints one JSON line: for both, the share of actual starts inside the 80% interval (the point's
"interval" is the point itself) and the median absolute error of the most likely start; appends
it to bench/RESULTS.md unless --no-results.

    nice python bench/eta_calibration.py
"""

from __future__ import annotations

import argparse
import csv
import heapq
import json
import sys
import time
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.results import append_results, calibration_seconds  # noqa: E402
from bench.trace_replay import TRACE, read_nodes  # noqa: E402
from scheduling.engine import (  # noqa: E402
    ClusterSnapshot,
    Policy,
    Quota,
    Request,
    RunningWorkload,
    RuntimeSamples,
    StartRange,
    calibration,
    interval_scale,
    schedule,
)
from scheduling.engine.running_ends import runtime_samples  # noqa: E402

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
TENANT = "trace"
LADDER = tuple(timedelta(hours=h) for h in (0.25, 1, 4, 12, 24, 72, 168, 720, 4320))
# As the portal's selector (scheduling/selectors/estimates.py) reads them.
SAMPLES_MAX = 5_000
BUCKET_MIN_RUNS = 10


@dataclass(frozen=True)
class TracePod:
    request: Request
    kind: str
    size: int
    arrives: float  # seconds since the replay's start
    runs: float  # seconds


def declared_limit(seconds: float) -> timedelta:
    return next((limit for limit in LADDER if limit.total_seconds() >= seconds), LADDER[-1])


def read_trace_pods(
    path: Path, *, pods: int, compress: float, classes: list[str]
) -> list[TracePod]:
    """The trace's first ``pods`` pods that could start on ``classes`` (any of them for a GPU
    pod of no model)."""
    with path.open(newline="") as handle:
        rows = [
            r
            for r in csv.DictReader(handle)
            if r["creation_time"] and r["scheduled_time"] and r["deletion_time"]
        ]
    rows.sort(key=lambda r: (int(r["creation_time"]), r["name"]))
    found = []
    for row in rows[:pods]:
        runs = float(int(row["deletion_time"]) - int(row["scheduled_time"]))
        if runs <= 0:
            continue
        gpus = int(row["num_gpu"])
        milli = int(row["gpu_milli"]) if gpus else 0
        shared = gpus == 1 and milli < 1000
        arrives = int(row["creation_time"]) / compress
        spec = tuple(s for s in (row.get("gpu_spec") or "").split("|") if s in classes)
        if row.get("gpu_spec") and not spec:
            continue
        if gpus and not spec:
            spec = tuple(classes)
        request = Request(
            id=row["name"],
            tenant=TENANT,
            project="trace",
            tier=0,
            gpu_classes=spec,
            submitted_at=EPOCH + timedelta(seconds=arrives),
            gpus=0 if shared else gpus,
            gpu_milli=milli if shared else 0,
            cpu_milli=int(row["cpu_milli"]),
            memory_mib=int(row["memory_mib"]),
            max_runtime=declared_limit(runs),
        )
        size = gpus * milli
        found.append(TracePod(request, row["qos"], size, arrives, runs))
    return found


class Replay:
    """The trace's pods through the engine, a cycle at every arrival and every end."""

    def __init__(
        self, *, nodes, pods: list[TracePod], classes: list[str], draws: int, conformal: bool
    ) -> None:
        self.conformal = conformal
        self.nodes = {n.name: n for n in nodes}
        self.classes = classes
        self.draws = draws
        self.pods = {p.request.id: p for p in pods}
        self.pending: dict[str, Request] = {}
        self.running: dict[str, RunningWorkload] = {}
        self.finished: deque[tuple[str, str, int, float]] = deque(maxlen=SAMPLES_MAX)
        self.ends: list[tuple[float, str]] = []
        self.estimated: dict[str, tuple[StartRange, StartRange, StartRange]] = {}
        # The unstretched range of each pod judged, with its actual start.
        self.raw: list[tuple[StartRange, datetime]] = []
        # Per pod judged: its id, the range, the point and its actual start.
        self.judged: list[tuple[str, StartRange, StartRange, datetime]] = []

    def snapshot(self, samples: RuntimeSamples) -> ClusterSnapshot:
        quotas = tuple(
            Quota(tenant=TENANT, gpu_class=c, guarantee=10**6, limit=10**6, shared=shared)
            for c in self.classes
            for shared in (False, True)
        )
        return ClusterSnapshot(nodes=tuple(self.nodes.values()), quotas=quotas, runtimes=samples)

    def cycle(self, at: float, arrived: list[str]) -> None:
        now = EPOCH + timedelta(seconds=at)
        work = [*self.pending.values(), *(w.request for w in self.running.values())]
        samples = runtime_samples(
            finished=list(self.finished),
            workloads=[(r.id, TENANT, self.pods[r.id].kind, self.pods[r.id].size) for r in work],
            min_runs=BUCKET_MIN_RUNS,
            seed=int(at),
        )
        samples = RuntimeSamples(samples.buckets, samples.bucket_of, samples.seed, self.draws)
        # As the portal's cycle: the draws' intervals stretched by how those of the estimates
        # judged so far held (each judged unstretched: ``self.raw``).
        scale = interval_scale(self.raw) if self.conformal else 1.0
        running = list(self.running.values())
        pending = sorted(self.pending.values(), key=lambda r: (r.submitted_at, r.id))
        policy = Policy(placement="bestfit", preemption=False)
        decided = schedule(
            snapshot=self.snapshot(samples),
            pending=pending,
            running=running,
            now=now,
            policy=policy,
        )
        waiting = [p for p in decided.pending if p.request_id in arrived]
        if waiting:
            points = schedule(
                snapshot=self.snapshot(RuntimeSamples()),
                pending=pending,
                running=running,
                now=now,
                policy=policy,
            )
            point_of = {p.request_id: p for p in points.pending}
            for reason in waiting:
                point = point_of[reason.request_id]
                if reason.estimated_start is None or point.estimated_start is None:
                    continue
                raw = StartRange(
                    reason.estimated_start, reason.estimated_start_low, reason.estimated_start_high
                )
                self.estimated[reason.request_id] = (
                    raw,
                    raw.stretched(scale, now=now),
                    StartRange(point.estimated_start, point.estimated_start, point.estimated_start),
                )
        for admission in decided.admissions:
            request = self.pending.pop(admission.request_id)
            self.running[request.id] = RunningWorkload(
                request=request,
                gpu_class=admission.gpu_class,
                placements=admission.placements,
                started_at=now,
            )
            for placement in admission.placements:
                self._take(placement, sign=-1)
            heapq.heappush(self.ends, (at + self.pods[request.id].runs, request.id))
            if request.id in self.estimated:
                raw, ranged, point = self.estimated.pop(request.id)
                self.judged.append((request.id, ranged, point, now))
                self.raw.append((raw, now))

    def end(self, request_id: str) -> None:
        workload = self.running.pop(request_id)
        for placement in workload.placements:
            self._take(placement, sign=1)
        pod = self.pods[request_id]
        self.finished.appendleft((TENANT, pod.kind, pod.size, pod.runs))

    def _take(self, placement, *, sign: int) -> None:
        node = self.nodes[placement.node]
        free = list(node.gpu_free_milli)
        for index in placement.gpu_indices:
            free[index] += sign * placement.gpu_milli
        self.nodes[placement.node] = type(node)(
            name=node.name,
            pool=node.pool,
            gpu_class=node.gpu_class,
            gpu_free_milli=tuple(free),
            cpu_free_milli=node.cpu_free_milli + sign * placement.cpu_milli,
            memory_free_mib=node.memory_free_mib + sign * placement.memory_mib,
        )

    def run(self, pods: list[TracePod]) -> None:
        arrivals = deque(sorted(pods, key=lambda p: (p.arrives, p.request.id)))
        while arrivals or (self.ends and self.pending):
            at = min(
                arrivals[0].arrives if arrivals else float("inf"),
                self.ends[0][0] if self.ends else float("inf"),
            )
            while self.ends and self.ends[0][0] <= at:
                self.end(heapq.heappop(self.ends)[1])
            arrived = []
            while arrivals and arrivals[0].arrives <= at:
                pod = arrivals.popleft()
                self.pending[pod.request.id] = pod.request
                arrived.append(pod.request.id)
            self.cycle(at, arrived)


def figures(judged: list[tuple[StartRange, datetime]]) -> dict:
    found = calibration(judged)
    return {
        "within_80": round(found.within, 3) if found.within is not None else None,
        "median_error_s": round(found.median_error_seconds, 1)
        if found.median_error_seconds is not None
        else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=1_000, help="the trace's first pods")
    parser.add_argument("--node-share", type=float, default=0.02, help="share of GPU nodes kept")
    parser.add_argument("--compress", type=float, default=20.0, help="arrivals this much faster")
    parser.add_argument("--draws", type=int, default=64)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument(
        "--no-conformal", action="store_true", help="the draws' intervals, not stretched"
    )
    parser.add_argument("--no-results", action="store_true", help="do not touch RESULTS.md")
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    all_nodes = read_nodes(TRACE / "openb_node_list_gpu_node.csv")
    kept = sorted(
        rng.choice(
            len(all_nodes), size=max(1, int(len(all_nodes) * args.node_share)), replace=False
        )
    )
    nodes = [all_nodes[i] for i in kept]
    classes = sorted({n.gpu_class for n in nodes})
    pods = read_trace_pods(
        TRACE / "openb_pod_list_default.csv",
        pods=args.pods,
        compress=args.compress,
        classes=classes,
    )
    started = time.perf_counter()
    replay = Replay(
        nodes=nodes, pods=pods, classes=classes, draws=args.draws, conformal=not args.no_conformal
    )
    replay.run(pods)
    ranged = figures([(r, actual) for _, r, _, actual in replay.judged])
    point = figures([(p, actual) for _, _, p, actual in replay.judged])
    line = {
        "bench": "eta_calibration",
        "calibration_s": calibration_seconds(),
        "pods": len(pods),
        "nodes": len(nodes),
        "compress": args.compress,
        "draws": args.draws,
        "estimated": len(replay.judged),
        "never_started": len(replay.pending),
        "conformal": not args.no_conformal,
        "range_within_80": ranged["within_80"],
        "range_median_error_s": ranged["median_error_s"],
        "point_within": point["within_80"],
        "point_median_error_s": point["median_error_s"],
        "wall_s": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(line))
    if not args.no_results:
        append_results(bench="eta_calibration", argv=sys.argv, figures=line)


if __name__ == "__main__":
    main()
