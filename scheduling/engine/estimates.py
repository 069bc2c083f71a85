"""Start-time estimates for pending work, as a range: the queue simulated forward once per
draw of when running work ends (``RunningEnds``), each start the moment releases free enough
for it; the draws' median is the most likely start, their 10th and 90th percentiles the 80%
interval. With max runtimes only (no samples) it is one draw: ``squeue --start``'s point."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from .backfill import Backfill
from .explain import CAPACITY_CODES, PendingCode
from .free_capacity import ClusterState
from .model import MILLI_PER_GPU, Request, RunningWorkload, StartRange
from .quota import QuotaLedger
from .reservations import ReservationBook
from .running_ends import ReleaseCurve, RunningEnds


@dataclass(frozen=True)
class EstimateQuery:
    """One pending request to estimate: why it waits on which class, and the milli-GPU the
    class must free for it (the work queued ahead in the class plus its own); for capacity,
    the same of the other classes it takes."""

    request: Request
    code: PendingCode
    gpu_class: str
    needed: int
    # The other classes it takes, each with the milli-GPU that class must free for it.
    also: tuple[tuple[str, int], ...] = ()


class Estimator:
    """Estimates for the workloads a cycle leaves pending. Made once admissions are over:
    capacity and releases stay fixed from then on, so it memoises per node set and class."""

    def __init__(
        self,
        *,
        cluster: ClusterState,
        ledger: QuotaLedger,
        backfill: Backfill,
        reservations: ReservationBook,
        eligible: Callable[[Request, str], np.ndarray],
        ends: RunningEnds,
    ) -> None:
        """``eligible``: as ``Preemptor``'s, an array held to the end of the cycle per answer."""
        self._cluster = cluster
        self._ledger = ledger
        self._backfill = backfill
        self._reservations = reservations
        self._eligible = eligible
        self._ends = ends
        self._idle: dict[int, int] = {}
        self._curves: dict[tuple, ReleaseCurve] = {}
        self._by_class: dict[str, list[RunningWorkload]] = {}

    def estimate(
        self, request: Request, code: PendingCode, gpu_class: str, needed: int
    ) -> StartRange | None:
        """The start range of one request pending for ``code`` (None: no estimate)."""
        return self.estimate_all([EstimateQuery(request, code, gpu_class, needed)])[0]

    def estimate_all(self, queries: Sequence[EstimateQuery]) -> list[StartRange | None]:
        """``estimate`` for many at once: one search per release curve for all their draws.
        A request that waits for capacity and takes several classes starts, in each draw, on
        the first of them that frees enough for it."""
        # One row per (query, class) asked; each query's draws are the earliest of its rows.
        owners: list[int] = []
        asked: dict[tuple, list[tuple[int, int, int]]] = defaultdict(list)
        floors: dict[str, list[int]] = defaultdict(list)
        heads: dict[int, str] = {}
        for index, query in enumerate(queries):
            if query.code == PendingCode.QUOTA:
                owners.append(index)
                self._ask_quota(asked, len(owners) - 1, query.request, query.gpu_class)
            elif query.code in CAPACITY_CODES or query.code == PendingCode.PRIORITY:
                for gpu_class, needed in ((query.gpu_class, query.needed), *query.also):
                    owners.append(index)
                    self._ask_class(
                        asked, floors, heads, len(owners) - 1, query.request, gpu_class, needed
                    )
        seconds = np.full((len(owners), self._ends.draws), np.inf)
        owned_by = np.array(owners, dtype=np.int64)
        several = np.bincount(owned_by, minlength=len(queries))[owned_by] > 1
        for key, wanted in asked.items():
            curve = self._curve(key)
            rows, amounts, ahead = (np.array(column) for column in zip(*wanted, strict=True))
            # A row the known ends free in too few draws for a most likely start has none,
            # unless another class of its request may: searched only where it counts.
            searched = (
                self._ends.draws_reaching(curve.reach, amounts, ahead) >= self._ends.dated
            ) | several[rows]
            if searched.any():
                rows, amounts, ahead = rows[searched], amounts[searched], ahead[searched]
                share = self._ends.queue_share[None, :]
                wanted_each = amounts[:, None] + (ahead[:, None] * share).astype(np.int64)
                seconds[rows] = curve.when(wanted_each)
        for gpu_class, rows in floors.items():
            # Not before now, nor before the class's blocked head.
            shadow = self._backfill.shadow(gpu_class)
            floor = self._ends.latest(shadow.waits_for) if shadow is not None else 0.0
            seconds[rows] = np.maximum(seconds[rows], floor)
        for row, gpu_class in heads.items():
            seconds[row] = self._ends.latest(self._backfill.shadow(gpu_class).waits_for)
        earliest = np.full((len(queries), self._ends.draws), np.inf)
        np.minimum.at(earliest, np.array(owners, dtype=np.int64), seconds)
        ranges = self._ends.start_ranges(earliest)
        return [
            found if query.code == PendingCode.QUOTA else self._after_windows(query, found)
            for query, found in zip(queries, ranges, strict=True)
        ]

    def _ask_class(
        self,
        asked: dict[tuple, list[tuple[int, int, int]]],
        floors: dict[str, list[int]],
        heads: dict[int, str],
        row: int,
        request: Request,
        gpu_class: str,
        needed: int,
    ) -> None:
        """Ask when ``gpu_class``'s releases free ``needed`` on the request's eligible nodes
        (its blocked head: when its shadow's releases end)."""
        shadow = self._backfill.shadow(gpu_class)
        if shadow is not None and shadow.request_id == request.id:
            heads[row] = gpu_class
            return
        eligible = self._eligible(request, gpu_class)
        free = self._idle.get(id(eligible))
        if free is None:
            free = self._idle[id(eligible)] = self._cluster.idle_gpu_milli(eligible)
        own = request.gpu_milli_per_replica * request.smallest_gang
        asked[("class", gpu_class)].append((row, own - free, needed - own))
        floors[gpu_class].append(row)

    def _after_windows(self, query: EstimateQuery, found: StartRange | None) -> StartRange | None:
        """``found`` put off past other tenants' reservation windows it would overlap."""
        if found is None or query.request.preemptible:
            return found
        eligible = self._eligible(query.request, query.gpu_class)
        capacity = int(self._cluster.gpu_count[eligible].sum()) * MILLI_PER_GPU

        def later(start: datetime) -> datetime:
            return self._reservations.after_windows(
                query.request, query.gpu_class, start, need=query.needed, capacity=capacity
            )

        return StartRange(
            likely=later(found.likely),
            low=later(found.low),
            high=later(found.high) if found.high is not None else None,
        )

    def _ask_quota(
        self,
        asked: dict[tuple, list[tuple[int, int, int]]],
        index: int,
        request: Request,
        gpu_class: str,
    ) -> None:
        """Ask when the tenant's own releases leave its quota room for the request's gang
        minimum (nothing to ask without a quota)."""
        resource = request.quota_resource(gpu_class)
        quota = self._ledger.quota(tenant=request.tenant, resource=resource)
        if quota is None:
            return
        used = self._ledger.tenant_usage[(request.tenant, resource)]
        excess = used + request.quota_amount * request.smallest_gang
        # With no cohort and no shared pool there is nothing to borrow: the guarantee is the
        # ceiling.
        may_borrow = quota.cohort or self._ledger.pool(resource)
        excess -= quota.limit if may_borrow else quota.guarantee
        asked[("quota", gpu_class, request.tenant, resource)].append((index, excess, 0))

    def _curve(self, key: tuple) -> ReleaseCurve:
        """The release curve of a class's running work, or of one tenant's work counted
        against one quota resource."""
        curve = self._curves.get(key)
        if curve is None:
            gpu_class = key[1]
            running = self._running_in(gpu_class)
            if key[0] == "class":
                amounts = [w.request.gpu_milli_per_replica * len(w.placements) for w in running]
            else:
                tenant, resource = key[2:]
                running = [
                    w
                    for w in running
                    if w.request.tenant == tenant
                    and w.request.quota_resource(gpu_class) == resource
                ]
                amounts = [w.request.quota_amount * len(w.placements) for w in running]
            curve = self._curves[key] = ReleaseCurve(self._ends.of(running), amounts)
        return curve

    def _running_in(self, gpu_class: str) -> list[RunningWorkload]:
        """The running work of a class (all of it for CPU-only work's empty class)."""
        running = self._by_class.get(gpu_class)
        if running is None:
            running = self._by_class[gpu_class] = [
                w for w in self._ends.workloads if not gpu_class or w.gpu_class == gpu_class
            ]
        return running


@dataclass(frozen=True)
class Calibration:
    """How estimates held against actual starts: the share of actual starts inside their 80%
    interval (one with no upper bound holds any start from its low on) and the median absolute
    error of the most likely start, in seconds (None: no estimate to judge)."""

    estimates: int
    within: float | None
    median_error_seconds: float | None


def calibration(judged: Sequence[tuple[StartRange, datetime]]) -> Calibration:
    """The calibration of estimates, each with the actual start it is judged against."""
    if not judged:
        return Calibration(estimates=0, within=None, median_error_seconds=None)
    inside = sum(
        1
        for estimate, actual in judged
        if estimate.low <= actual and (estimate.high is None or actual <= estimate.high)
    )
    errors = [abs((actual - estimate.likely).total_seconds()) for estimate, actual in judged]
    return Calibration(
        estimates=len(judged),
        within=inside / len(judged),
        median_error_seconds=float(np.median(errors)),
    )


# Fewer judged estimates than this: too few to stretch the intervals by.
SCALE_MIN_JUDGED = 30
# However many estimates missed, intervals are stretched at most this much.
SCALE_MAX = 10.0


def interval_scale(judged: Sequence[tuple[StartRange, datetime]], *, target: float = 0.8) -> float:
    """The stretch of the intervals' sides about their most likely start that would have
    made ``target`` of the ``judged`` estimates (each with its actual start) hold it: split
    conformal prediction, each miss measured in its own side's widths. 1 with too few."""
    if len(judged) < SCALE_MIN_JUDGED:
        return 1.0
    widths = []
    for estimate, actual in judged:
        if actual >= estimate.likely:
            if estimate.high is None:
                widths.append(0.0)  # no upper bound: any later start is inside
                continue
            side, off = estimate.high - estimate.likely, actual - estimate.likely
        else:
            side, off = estimate.likely - estimate.low, estimate.likely - actual
        if side.total_seconds() > 0:
            widths.append(off / side)
        else:
            widths.append(0.0 if not off else SCALE_MAX)
    scale = float(np.quantile(widths, target, method="higher"))
    return min(SCALE_MAX, max(scale, 1 / SCALE_MAX))
