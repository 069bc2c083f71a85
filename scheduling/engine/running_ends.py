"""When running work ends, as draws: each running workload's remaining time drawn from what
similar work actually ran (``RuntimeSamples``), never past its max runtime; the start
estimates simulate the queue forward once per draw and read their range off the draws."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

import numpy as np

from .model import RunningWorkload, RuntimeSamples, StartRange

# The 80% interval: the draws' 10th and 90th percentiles around their median.
LOW, LIKELY, HIGH = 0.1, 0.5, 0.9


def similar_buckets(*, tenant: str, kind: str, size: int) -> tuple[str, ...]:
    """The ``RuntimeSamples`` buckets of work of a tenant, kind and size (its gang's milli-GPU),
    finest first: same tenant, kind and size; same tenant and kind; same kind and size; same
    kind; all work. A workload draws from the finest with enough runs."""
    return (f"{tenant}/{kind}/{size}", f"{tenant}/{kind}", f"*/{kind}/{size}", f"*/{kind}", "*")


def runtime_samples(
    *,
    finished: Iterable[tuple[str, str, int, float]],
    workloads: Iterable[tuple[str, str, str, int]],
    min_runs: int,
    seed: int,
    interval_scale: float = 1.0,
) -> RuntimeSamples:
    """``RuntimeSamples`` from the run times of ``finished`` work (tenant, kind, size,
    seconds), for ``workloads`` (id, tenant, kind, size): a bucket needs ``min_runs`` runs,
    else its work draws from a coarser one."""
    runs: dict[str, list[float]] = defaultdict(list)
    for tenant, kind, size, seconds in finished:
        if seconds > 0:
            for bucket in similar_buckets(tenant=tenant, kind=kind, size=size):
                runs[bucket].append(seconds)
    buckets = {key: tuple(sorted(ran)) for key, ran in runs.items() if len(ran) >= min_runs}
    finest: dict[tuple[str, ...], str | None] = {}
    bucket_of = {}
    for workload_id, tenant, kind, size in workloads if buckets else ():
        similar = similar_buckets(tenant=tenant, kind=kind, size=size)
        if similar not in finest:
            finest[similar] = next((b for b in similar if b in buckets), None)
        if finest[similar] is not None:
            bucket_of[workload_id] = finest[similar]
    return RuntimeSamples(
        buckets=buckets, bucket_of=bucket_of, seed=seed, interval_scale=interval_scale
    )


class RunningEnds:
    """Seconds from ``now`` until each running workload ends, one column per draw (inf: not
    known, it has neither samples beyond its age nor a max runtime). With no samples at all
    there is one draw: the max runtimes, as the point estimate always had."""

    def __init__(
        self, *, running: Iterable[RunningWorkload], samples: RuntimeSamples, now: datetime
    ) -> None:
        self._now = now
        self._scale = samples.interval_scale
        workloads = self.workloads = sorted(running, key=lambda w: w.request.id)
        self._row = {w.request.id: i for i, w in enumerate(workloads)}
        draws = samples.draws if samples.buckets else 1
        limit = np.array(
            [
                (w.expected_end - now).total_seconds() if w.expected_end is not None else math.inf
                for w in workloads
            ]
        )
        self.ends = np.repeat(limit[:, None], draws, axis=1)
        # Per draw, the share of the work queued ahead that starts first: the queue's order
        # is as uncertain as the run times (backfill lets small work by, several classes let
        # work go elsewhere). All of it with max runtimes only, as the point always counted.
        self.queue_share = np.ones(draws)
        if samples.buckets:
            rng = np.random.default_rng(samples.seed)
            self.queue_share = rng.random(draws)
            if workloads:
                self._draw(workloads, samples, limit, rng)
        self._shares_sorted = np.sort(self.queue_share)
        # Draws that must start for a most likely start (their median) to exist.
        self.dated = math.ceil(LIKELY * draws)

    def _draw(
        self,
        workloads: list[RunningWorkload],
        samples: RuntimeSamples,
        limit: np.ndarray,
        rng: np.random.Generator,
    ) -> None:
        # One row of uniforms per workload in id order: a workload's draws do not depend on
        # which others run beside it, nor on how they are grouped.
        uniforms = rng.random((len(workloads), samples.draws))
        age = np.array([(self._now - w.started_at).total_seconds() for w in workloads])
        rows_of: dict[str, list[int]] = defaultdict(list)
        for i, workload in enumerate(workloads):
            bucket = samples.bucket_of.get(workload.request.id)
            if bucket in samples.buckets:
                rows_of[bucket].append(i)
        for bucket, listed in rows_of.items():
            runs = np.asarray(samples.buckets[bucket], dtype=float)
            rows = np.array(listed)
            # Only what similar work ran beyond this one's age: it has not ended yet.
            first = np.searchsorted(runs, age[rows], side="right")
            left = len(runs) - first
            known = left > 0
            rows, first, left = rows[known], first[known], left[known]
            picks = first[:, None] + (uniforms[rows] * left[:, None]).astype(np.int64)
            remaining = runs[picks] - age[rows][:, None]
            self.ends[rows] = np.minimum(remaining, limit[rows][:, None])

    def draws_reaching(self, reach: int, amounts: np.ndarray, ahead: np.ndarray) -> np.ndarray:
        """Per row, in how many draws ``amounts`` plus the drawn share of ``ahead`` stays
        within ``reach`` (what known ends release at most)."""
        within = np.searchsorted(
            # One milli over: the amounts drawn are rounded down.
            self._shares_sorted,
            (reach - amounts + 1) / np.maximum(ahead, 1),
            side="right",
        )
        return np.where(ahead > 0, within, np.where(amounts <= reach, self.draws, 0))

    @property
    def draws(self) -> int:
        return self.ends.shape[1]

    def of(self, workloads: Sequence[RunningWorkload]) -> np.ndarray:
        """The ends of ``workloads`` (draws x workloads); those no longer running end now."""
        rows = [self._row.get(w.request.id) for w in workloads]
        ends = np.zeros((self.draws, len(rows)))
        present = [i for i, row in enumerate(rows) if row is not None]
        ends[:, present] = self.ends[[rows[i] for i in present]].T
        return ends

    def latest(self, request_ids: Iterable[str]) -> np.ndarray:
        """Per draw, when the last of these running workloads ends (0: none still runs)."""
        rows = [self._row[i] for i in request_ids if i in self._row]
        if not rows:
            return np.zeros(self.draws)
        return self.ends[rows].max(axis=0)

    def start_ranges(self, seconds: np.ndarray) -> list[StartRange | None]:
        """The range of each row of per-draw starts (seconds from now; inf: never)."""
        draws = seconds.shape[1]
        columns = [math.ceil(q * draws) - 1 for q in (LOW, LIKELY, HIGH)]
        ranges: list[StartRange | None] = [None] * len(seconds)
        # Only rows that start in at least half the draws have a most likely start.
        dated = np.flatnonzero(np.isfinite(seconds).sum(axis=1) >= self.dated)
        picked = np.partition(seconds[dated], columns, axis=1)[:, columns].tolist()
        for row, (low, likely, high) in zip(dated.tolist(), picked, strict=True):
            ranges[row] = StartRange(
                likely=self._at(likely),
                low=self._at(low),
                high=self._at(high) if math.isfinite(high) else None,
            ).stretched(self._scale, now=self._now)
        return ranges

    def _at(self, seconds: float) -> datetime:
        return self._now + timedelta(seconds=float(seconds))


class ReleaseCurve:
    """Per draw, the running work of a set in the order it ends, and how much it has released
    by each end: ``when`` answers for all draws in one search."""

    def __init__(self, ends: np.ndarray, amounts: Sequence[int]) -> None:
        draws, count = ends.shape
        self._count = count
        # The most any draw releases by ends known: beyond it, every draw answers never.
        self.reach = 0
        if not count:
            return
        order = np.argsort(ends, axis=1, kind="stable")
        self._times = np.take_along_axis(ends, order, axis=1).ravel()
        released = np.cumsum(np.asarray(amounts, dtype=np.int64)[order], axis=1)
        # Each draw's running totals lifted past the previous draw's, so that one sorted
        # array holds them all.
        self._offsets = np.arange(draws, dtype=np.int64) * (int(released[0, -1]) + 1)
        finite = np.isfinite(np.take_along_axis(ends, order, axis=1))
        self.reach = int(np.where(finite, released, 0).max())
        self._released = (released + self._offsets[:, None]).ravel()
        self._starts = np.arange(draws, dtype=np.int64) * count

    def when(self, amounts: np.ndarray) -> np.ndarray:
        """Per row of amounts (one per draw) and draw, seconds until the running work has
        released that amount (inf: never)."""
        if not self._count:
            return np.full((len(amounts), 1), math.inf)
        # Past a draw's total the search lands in the next draw's: counted as never.
        wanted = np.maximum(amounts, 0) + self._offsets[None, :]
        found = np.searchsorted(self._released, wanted, side="left")
        inside = found - self._starts[None, :] < self._count
        return np.where(inside, self._times[np.minimum(found, len(self._times) - 1)], math.inf)
