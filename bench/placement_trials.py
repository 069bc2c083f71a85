"""Placement policies tried for issue 9 and rejected, kept so their figures can be rerun.

Importing this module registers them (names start with ``trial_``, but for ``fgd_cpu_aware``,
named as in its first runs); ``bench/trace_replay.py --trials`` does, e.g.

    nice .venv/bin/python bench/trace_replay.py --trials --policies trial_scarcity_1 --no-results
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from scheduling.engine.free_capacity import ClusterState, Demand
from scheduling.engine.model import TaskType
from scheduling.engine.policies.base import MAX_SCORE
from scheduling.engine.policies.cpu_aware import (
    CpuReachFragmentationPolicy,
    CpuReachHostsKeptPolicy,
    StateTables,
    TableScores,
)
from scheduling.engine.policies.fgd import ScarceNodesKeptFragmentationPolicy


class PlainTables(CpuReachFragmentationPolicy):
    """The machinery of ``fgd_cpu_reach`` with the paper's fragmentation: ``fgd_used_first``."""

    name = "trial_plain"
    share_mode = "plain"


class ReachShares(CpuReachFragmentationPolicy):
    """``fgd_cpu_reach`` under the name its first runs (2026-11-30 22:55-23:25 UTC) used."""

    name = "trial_reach_shares"


class CpuCapacity(CpuReachFragmentationPolicy):
    """Sharing types: all free milli of the node but what the shares that fit (by GPU and by
    the node's free CPU) would take. Named as in its runs of 2026-11-30 22:55-23:25 UTC."""

    name = "fgd_cpu_aware"
    share_mode = "capacity"


class ReachAll(CpuReachFragmentationPolicy):
    """Every GPU type: GPUs past the number of tasks the free CPU allows are fragmented."""

    name = "trial_reach_all"
    share_mode = "reach"
    whole_mode = "reach"


class CapacityAndReach(CpuCapacity):
    """``fgd_cpu_aware`` plus CPU reach for whole-GPU types."""

    name = "trial_capacity_reach_whole"
    whole_mode = "reach"


class Scarcity(PlainTables):
    """The mix reweighed every 100 placements: a GPU type's popularity times (its expected
    tasks until the cluster is full / the tasks of it the cluster can still take) to a power,
    renormalised over GPU types; CPU-only types keep their popularity."""

    name = "trial_scarcity_1"
    epoch = 100
    power = 1.0

    def reweigh(self, cluster: ClusterState, tables: StateTables) -> np.ndarray:
        supply = tables.capacity[self._table_rows[cluster.state_id]].sum(axis=0)
        requests = np.array([t.gpus * t.gpu_milli if t.gpus else 0 for t in self._mix])
        popularity = self._popularity / self._popularity.sum()
        remaining = cluster.idle_gpu_milli() / max(float(popularity @ requests), 1.0)
        ratio = popularity * remaining / np.maximum(supply, 1.0)
        gpu_types = tables.milli > 0
        scaled = popularity * np.where(gpu_types, ratio**self.power, 1.0)
        if scaled[gpu_types].sum() > 0:
            scaled[gpu_types] *= popularity[gpu_types].sum() / scaled[gpu_types].sum()
        return scaled / scaled.sum()


class ScarcityHalf(Scarcity):
    name = "trial_scarcity_05"
    power = 0.5


class ScarcityTwo(Scarcity):
    name = "trial_scarcity_2"
    power = 2.0


class CpuAwareScarceKept(TableScores, ScarceNodesKeptFragmentationPolicy):
    """``fgd_keep_scarce``'s order among equal scores on ``fgd_cpu_aware``'s score."""

    name = "trial_cpu_aware_scarce"
    share_mode = "capacity"

    def __init__(
        self,
        *,
        workload: Sequence[tuple[TaskType, float]],
        rare_workload: Sequence[tuple[TaskType, float]],
    ) -> None:
        super().__init__(workload=workload, rare_workload=rare_workload)
        self._init_tables(workload)

    def fgd_scores(
        self, *, cluster: ClusterState, candidates: np.ndarray, demand: Demand
    ) -> np.ndarray:
        return self.table_scores(cluster=cluster, candidates=candidates, demand=demand)


class ReachSharesScarceKept(CpuAwareScarceKept):
    """``trial_cpu_aware_scarce`` with ``fgd_cpu_reach``'s fragmentation."""

    name = "trial_reach_shares_scarce"
    share_mode = "reach"


class CpuAwareScale700(CpuCapacity):
    name = "trial_cpu_aware_scale700"
    scale = 700.0


class CpuAwareScale1400(CpuCapacity):
    name = "trial_cpu_aware_scale1400"
    scale = 1400.0


class GpuPackingTables(StateTables):
    """Adds mode "gpu_capacity": all free milli but what the shares that fit the GPUs would
    take, whatever the node's free CPU."""

    def fragmented(self, mode: str, **parts: np.ndarray) -> np.ndarray:
        if mode == "gpu_capacity":
            return parts["idle"] - parts["shares"] * self.milli
        return super().fragmented(mode, **parts)


class GpuCapacityShares(CpuCapacity):
    """Sharing types: ``fgd_cpu_aware``'s capacity without the CPU bound."""

    name = "trial_gpu_capacity_shares"
    share_mode = "gpu_capacity"
    tables = GpuPackingTables


class ReachScarceHostsKept(CpuReachHostsKeptPolicy):
    """``fgd_cpu_keep_hosts`` under the name its first runs (2026-11-30 23:21 UTC) used."""

    name = "trial_reach_keep_hosts"


class ReachScarceHostsKeptOne(CpuReachHostsKeptPolicy):
    """``fgd_cpu_keep_hosts`` with a penalty of 1 point instead of 5."""

    name = "trial_reach_keep_hosts_1"
    penalty = 1.0


class WasteTables(StateTables):
    """Adds ``waste``: per state, the milli-GPU its opened GPUs are expected to leave idle
    for good (``waste_curve`` of each GPU's free milli; a GPU still whole counts 0)."""

    waste_curve: np.ndarray | None = None

    def flush(self) -> None:
        keys = list(self._pending)
        first = len(self._rows) - len(keys)
        super().flush()
        if not hasattr(self, "waste") or len(self.waste) < len(self.frag):
            grown = np.zeros(len(self.frag))
            if hasattr(self, "waste"):
                grown[: len(self.waste)] = self.waste
            self.waste = grown
        assert self.waste_curve is not None
        for i, (_, _, frees) in enumerate(keys):
            self.waste[first + i] = self.waste_curve[list(frees)].sum()


def waste_curve(mix: Sequence[TaskType], weights: np.ndarray, competition: float) -> np.ndarray:
    """W(f): the idle milli a GPU with ``f`` free is expected to end with, if each share that
    fits comes next in proportion to its popularity and the gap is filled at all with
    probability P_f / (P_f + competition) (P_f: the popularity of the shares that fit)."""
    sizes = np.array([t.gpu_milli if t.gpus == 1 else 0 for t in mix])
    share = (sizes > 0) & (sizes < 1000)
    gpu_weight = weights[np.array([t.gpus > 0 for t in mix])].sum()
    sizes, q = sizes[share], weights[share] / max(gpu_weight, 1e-12)
    curve = np.zeros(1001)
    for free in range(1, 1000):
        fits = sizes <= free
        total = q[fits].sum()
        if not total:
            curve[free] = free
            continue
        expected = (q[fits] * curve[free - sizes[fits]]).sum() / total
        filled = total / (total + competition)
        curve[free] = (1 - filled) * free + filled * expected
    return curve


class WasteBlend(CpuReachHostsKeptPolicy):
    """``fgd_cpu_keep_hosts`` whose fragmentation delta also counts ``blend`` times the
    change in expected waste (``waste_curve``) of the node's opened GPUs."""

    name = "trial_waste_b1_c05"
    tables = WasteTables
    blend = 1.0
    competition = 0.05

    def _sync(self, cluster: ClusterState) -> StateTables:
        tables = super()._sync(cluster)
        if tables.waste_curve is None:
            tables.waste_curve = waste_curve(self._mix, self._weights, self.competition)
        return tables

    def _integer_scores(self, before: np.ndarray, after: np.ndarray) -> np.ndarray:
        tables = self._state_tables
        tables.flush()
        delta = (tables.frag[before] - tables.frag[after]) @ self._weights
        delta = delta + self.blend * (tables.waste[before] - tables.waste[after])
        return np.floor(MAX_SCORE / (1.0 + np.exp(-delta / self.scale)))


class WasteBlendC0(WasteBlend):
    name = "trial_waste_b1_c0"
    competition = 0.0


class WasteBlendC02(WasteBlend):
    name = "trial_waste_b1_c02"
    competition = 0.2


class WasteBlendHalf(WasteBlend):
    name = "trial_waste_b05_c05"
    blend = 0.5


class WasteBlendTwo(WasteBlend):
    name = "trial_waste_b2_c05"
    blend = 2.0


def gap_counts(cluster: ClusterState) -> np.ndarray:
    """How many GPUs of the cluster have each free milli (0 and 1,000 not counted: the
    sum-of-squares rule only counts partly filled bins)."""
    counts = np.bincount(np.clip(cluster.gpu_free.ravel(), 0, 1000), minlength=1001)
    counts[0] = counts[1000] = 0
    return counts


def sum_of_squares_delta(counts: np.ndarray, frees: np.ndarray, share: int) -> np.ndarray:
    """Change of sum over gaps g of N(g)^2 if a ``share`` goes to a GPU with ``frees`` free."""
    left = frees - share
    return np.where(left > 0, 2 * counts[np.maximum(left, 0)] + 1, 0) + np.where(
        frees < 1000, 1 - 2 * counts[np.minimum(frees, 1000)], 0
    )


class SumOfSquaresGpu(CpuReachHostsKeptPolicy):
    """``fgd_cpu_keep_hosts``; a share takes, among the GPUs of the chosen node with the best
    score, the one that raises the cluster's sum of squared gap counts least."""

    name = "trial_ss_gpu"

    def choose_gpus(self, *, cluster: ClusterState, node: int, demand: Demand) -> tuple[int, ...]:
        if not demand.is_shared:
            return cluster.best_fit_gpus(demand=demand, node=node)
        state = int(cluster.state_id[node])
        rows, options = self._outcomes(cluster, state, demand)
        scored = self._integer_scores(np.full(len(rows), self._table_rows[state]), rows)
        best = np.array([f for f, s in zip(options, scored, strict=True) if s == scored.max()])
        delta = sum_of_squares_delta(gap_counts(cluster), best, demand.gpu_milli)
        free = int(best[int(np.argmin(delta))])
        return (next(i for i, f in enumerate(cluster.gpu_free[node].tolist()) if f == free),)


class SumOfSquaresTies(SumOfSquaresGpu):
    """``trial_ss_gpu``, and among nodes of equal (score, in use) a share goes to the node
    whose best GPU raises the sum of squares least, then ``fgd_used_first``'s order."""

    name = "trial_ss_ties"

    def scores(
        self, *, cluster: ClusterState, candidates: np.ndarray, demand: Demand
    ) -> np.ndarray:
        result = super().scores(cluster=cluster, candidates=candidates, demand=demand)
        if not demand.is_shared:
            return result
        ranked = np.floor(result * 2) / 2  # score and in use, without the order within use
        within = result - ranked
        frees = cluster.gpu_free[candidates]
        delta = sum_of_squares_delta(gap_counts(cluster), np.clip(frees, 0, 1000), demand.gpu_milli)
        delta = np.where(frees >= demand.gpu_milli, delta, np.iinfo(np.int64).max).min(axis=1)
        levels, rank = np.unique(delta, return_inverse=True)
        order = (len(levels) - 1 - rank.reshape(-1)) + within / 0.4
        return ranked + 0.4 * order / len(levels)


class WasteBlendFour(WasteBlend):
    name = "trial_waste_b4_c05"
    blend = 4.0


class WasteBlendTwoC01(WasteBlend):
    name = "trial_waste_b2_c01"
    blend = 2.0
    competition = 0.1


class WasteBlendTwoC002(WasteBlend):
    name = "trial_waste_b2_c002"
    blend = 2.0
    competition = 0.02
