"""Ours: ``fgd_cpu_waste_reach`` whose expected waste is taken against the demand still to come.

``fgd_cpu_waste_reach`` scores a node by FGD's fragmentation plus the expected waste W(f) of
its GPUs (``waste_curve``): how much of a gap of f milli is expected to stay idle. Its W is
fixed: a gap is filled with a probability that depends only on the mix. But whether a gap of
190 milli ever gets one of the rare shares that fit it depends on how many such gaps there
already are (a thousand, once the 810 shares have arrived) and on how much demand is still to
come (less and less as the cluster fills). ``fgd_cpu_waste_demand`` recomputes W every
``period`` placements from the gaps the cluster has now and the shares still to come
(``demand_waste_curve``), and counts W more (weight 4) and the GPUs past the CPU reach of a
share as before (weight 2 on the milli W does not already count), all of it less when the CPU
still to come exceeds the free CPU (``DemandWastePolicy.cpu_factor``). Issue 9, third round:
the variants tried and their figures are in bench/experiments/placement_trials_lookahead.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Self

import numpy as np

from ..free_capacity import ClusterState, Demand
from ..model import MILLI_PER_GPU, TaskType
from .base import PolicyContext
from .cpu_aware import CpuReachWastePolicy, StateTables


def demand_waste_curve(*, sizes: np.ndarray, expected: np.ndarray, gaps: np.ndarray) -> np.ndarray:
    """W(f), f = 0..1,000: the milli a GPU with ``f`` free is expected to end with idle,
    against the shares still to come and the gaps there are now.

    ``sizes``: the GPU milli of the share types (distinct, ascending); ``expected``: how many
    shares of each size are still to come; ``gaps[f]``: how many opened GPUs have ``f`` free
    now. Shares go to the smallest gap they fit, every size in proportion: at gap size f, the
    shares that fit f and were not taken by smaller gaps (the overflow) fill each of the
    ``gaps[f]`` gaps, or one more, with probability q = min(1, overflow / (gaps[f] + 1)), by a
    share of each size in proportion to its overflow; what the gaps of size f do not take goes
    on to larger gaps. W(f) = (1 - q) f + q sum_s pi_f(s) W(f - s); W(1,000) = 0 (a whole GPU
    wastes nothing: whole-GPU work takes it).
    """
    top = MILLI_PER_GPU
    sizes = np.asarray(sizes, dtype=np.int64)
    remaining = np.asarray(expected, dtype=float).copy()
    q = np.zeros(top + 1)
    pi = np.zeros((top + 1, len(sizes)))
    present = np.flatnonzero(gaps[:top] > 0)
    # The overflow only changes at a gap size present or a share size: walk those cuts.
    start = 1
    for cut in np.unique(np.concatenate((present, sizes, [top]))).tolist():
        if cut < start:
            continue
        over = (sizes <= np.arange(start, cut + 1)[:, None]) * remaining[None, :]
        total = over.sum(axis=1)
        count = gaps[start : cut + 1] if cut < top else np.zeros(cut + 1 - start)
        q[start : cut + 1] = np.minimum(1.0, total / (count + 1))
        safe = np.where(total > 0, total, 1.0)[:, None]
        pi[start : cut + 1] = np.where(total[:, None] > 0, over / safe, 0.0)
        if cut < top and gaps[cut] > 0 and total[-1] > 0:
            remaining = remaining - min(1.0, gaps[cut] / total[-1]) * over[-1]
        start = cut + 1
    curve = np.zeros(top + 1)
    # W(f) needs W below f - smallest share only: fill it in blocks of that width.
    step = int(sizes.min()) if len(sizes) else top
    low = 1
    while low < top:
        frees = np.arange(low, min(low + max(step, 1), top))
        left = frees[:, None] - sizes[None, :]
        after = np.where(left >= 0, curve[np.maximum(left, 0)], 0.0)
        filled = (pi[frees] * after).sum(axis=1)
        curve[frees] = (1 - q[frees]) * frees + q[frees] * filled
        low = int(frees[-1]) + 1
    return curve


class RecomputedWasteTables(StateTables):
    """``StateTables`` whose ``waste`` can be recomputed for another W (``set_curve``): it
    keeps every row's free GPU milli and free CPU. A GPU's waste is W(f), plus
    ``stranded_weight`` times the milli W(f) leaves out (f - W(f)) when it is past the CPU
    reach of a share (the freest GPUs first), so that a GPU left without CPU counts as idle
    for good at weight ``1 + stranded_weight`` times W's."""

    stranded_weight = 0.5

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.scale = 1.0  # all of the waste is multiplied by it (``set_curve``)
        self._row_frees = np.zeros((16, 8), dtype=np.int64)
        self._row_cpu = np.zeros(16, dtype=np.int64)
        self._known = 0

    def flush(self) -> None:
        keys = list(self._pending)
        if not keys:
            return
        first = len(self._rows) - len(keys)
        width = max(self._row_frees.shape[1], max(len(frees) for _, _, frees in keys))
        if width > self._row_frees.shape[1]:
            padded = np.zeros((len(self._row_frees), width), dtype=np.int64)
            padded[:, width - self._row_frees.shape[1] :] = self._row_frees
            self._row_frees = padded
        super().flush()
        while len(self._rows) > len(self._row_frees):
            self._row_frees = np.concatenate((self._row_frees, np.zeros_like(self._row_frees)))
            self._row_cpu = np.concatenate((self._row_cpu, np.zeros_like(self._row_cpu)))
        for i, (_, cpu_free, frees) in enumerate(keys):
            if frees:
                self._row_frees[first + i, width - len(frees) :] = frees
            self._row_cpu[first + i] = cpu_free
        self._known = len(self._rows)

    def expected_waste(self, frees: np.ndarray, cpu_free: np.ndarray) -> np.ndarray:
        assert self.waste_curve is not None
        expected = self.waste_curve[frees]
        if not self.share_cpu:
            return self.scale * expected.sum(axis=1)
        idle = frees > 0
        rank = np.cumsum(idle[:, ::-1], axis=1)[:, ::-1]  # 1: the freest GPU
        stranded = idle & (rank > cpu_free // self.share_cpu)
        extra = np.where(stranded, self.stranded_weight * (frees - expected), 0.0)
        return self.scale * (expected + extra).sum(axis=1)

    def set_curve(self, curve: np.ndarray, *, scale: float = 1.0) -> None:
        """Recompute every row's waste for W = ``curve``, multiplied by ``scale``."""
        self.flush()
        self.waste_curve = curve
        self.scale = scale
        if self._known:
            known = slice(0, self._known)
            self.waste[known] = self.expected_waste(
                self._row_frees[known], self._row_cpu[known, None]
            )


class DemandWastePolicy(CpuReachWastePolicy):
    """Ours: ``fgd_cpu_waste_reach`` with W(f) recomputed every ``period`` placements against
    the gaps of the cluster and the shares still to come (``demand_waste_curve``): the mix's
    shares in proportion, ``horizon`` times as many as the idle GPU milli of the cluster takes
    at the mix's mean GPU request. The expected waste weighs 4 in the score's delta (2 in
    ``fgd_cpu_waste_reach``), a GPU past the CPU reach of a share 4 + 2 on its milli not
    already in W (2 there); all of it times min(1, free CPU / CPU still to come)**2 (the CPU
    the tasks still to come ask at the mix's mean): when the CPU runs short of the demand, GPUs
    go idle for want of CPU whatever fills their gaps, and the score falls back towards
    ``fgd_cpu_keep_hosts``'s. On the trace's lists but the CPU-heavy ones the factor stays 1."""

    name = "fgd_cpu_waste_demand"
    waste_weight = 4.0
    tables = RecomputedWasteTables
    period = 200
    horizon = 0.25
    cpu_power = 2.0

    def __init__(
        self,
        *,
        workload: Sequence[tuple[TaskType, float]],
        rare_workload: Sequence[tuple[TaskType, float]],
    ) -> None:
        super().__init__(workload=workload, rare_workload=rare_workload)
        self._calls = 0
        milli = np.array([t.gpu_milli if t.gpus == 1 else 0 for t in self._mix], dtype=np.int64)
        share = (milli > 0) & (milli < MILLI_PER_GPU)
        self._sizes, inverse = np.unique(milli[share], return_inverse=True)
        self._size_weight = np.bincount(
            inverse.reshape(-1), weights=self._weights[share], minlength=len(self._sizes)
        )
        request = np.array([t.gpus * t.gpu_milli if t.gpus else 0 for t in self._mix])
        self._mean_request = max(float(self._weights @ request), 1.0) if len(request) else 1.0
        cpu = np.array([t.cpu_milli for t in self._mix], dtype=float)
        self._mean_cpu = float(self._weights @ cpu) if len(cpu) else 0.0

    @classmethod
    def from_context(cls, context: PolicyContext) -> Self:
        return cls(workload=context.workload, rare_workload=context.rare_workload)

    def curve_now(self, cluster: ClusterState) -> np.ndarray:
        """W against the cluster's gaps now and the shares still to come."""
        frees = cluster.gpu_free[cluster.gpu_free > 0]
        gaps = np.bincount(np.minimum(frees, MILLI_PER_GPU), minlength=MILLI_PER_GPU + 1)
        to_come = self.horizon * cluster.idle_gpu_milli() / self._mean_request
        return demand_waste_curve(
            sizes=self._sizes, expected=self._size_weight * to_come, gaps=gaps
        )

    def cpu_factor(self, cluster: ClusterState) -> float:
        """min(1, free CPU / CPU still to come)**``cpu_power``; the tasks still to come: as many
        as the idle GPU milli takes at the mix's mean GPU request."""
        to_come = cluster.idle_gpu_milli() / self._mean_request * self._mean_cpu
        if to_come <= 0:
            return 1.0
        return min(1.0, float(cluster.cpu_free.sum()) / to_come) ** self.cpu_power

    def table_scores(
        self, *, cluster: ClusterState, candidates: np.ndarray, demand: Demand
    ) -> np.ndarray:
        tables = self._sync(cluster)
        if self._calls % self.period == 0:
            assert isinstance(tables, RecomputedWasteTables)
            tables.set_curve(self.curve_now(cluster), scale=self.cpu_factor(cluster))
            self._score_tables.clear()
        self._calls += 1
        return super().table_scores(cluster=cluster, candidates=candidates, demand=demand)
