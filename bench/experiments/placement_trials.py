"""Placement policies tried for issue 9 and rejected, kept so their figures can be rerun.

Importing this module registers them (names start with ``trial_``, but for ``fgd_cpu_aware``
and ``fgd_cpu_waste``, named as in their recorded runs); ``bench/trace_replay.py --trials``
does, e.g.

    nice .venv/bin/python bench/trace_replay.py --trials --policies trial_scarcity_1 --no-results
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from scheduling.engine.free_capacity import ClusterState, Demand
from scheduling.engine.model import TaskType
from scheduling.engine.policies.cpu_aware import (
    CpuReachFragmentationPolicy,
    CpuReachHostsKeptPolicy,
    CpuReachWastePolicy,
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


class PlainWaste(CpuReachWastePolicy):
    """``fgd_cpu_waste_reach`` with W(f) for every opened GPU, whatever the node's free CPU.
    Named as in its recorded runs (2026-12-01 01:07-01:35 UTC; tried as ``trial_waste_b2_c05``)."""

    name = "fgd_cpu_waste"
    waste_cpu_reach = False


class WasteWeightHalf(PlainWaste):
    """``fgd_cpu_waste`` with the expected waste weighed 0.5 instead of 2 (``_1``: 1, ``_4``:
    4); ``_c0``, ``_c02``: weight 1, competition 0 or 0.2 instead of 0.05."""

    name = "trial_waste_b05_c05"
    waste_weight = 0.5


class WasteWeightOne(PlainWaste):
    name = "trial_waste_b1_c05"
    waste_weight = 1.0


class WasteWeightFour(PlainWaste):
    name = "trial_waste_b4_c05"
    waste_weight = 4.0


class WasteNoCompetition(PlainWaste):
    name = "trial_waste_b1_c0"
    waste_weight = 1.0
    competition = 0.0


class WasteCompetition02(PlainWaste):
    name = "trial_waste_b1_c02"
    waste_weight = 1.0
    competition = 0.2


class WasteCompetition01(PlainWaste):
    """``fgd_cpu_waste`` with competition 0.1 (``_c002``: 0.02) instead of 0.05."""

    name = "trial_waste_b2_c01"
    competition = 0.1


class WasteCompetition002(PlainWaste):
    name = "trial_waste_b2_c002"
    competition = 0.02


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


class OpenedReachWasteTables(StateTables):
    """``waste`` where only opened GPUs count in the CPU reach: a whole GPU past it wastes 0."""

    def expected_waste(self, frees: np.ndarray, cpu_free: np.ndarray) -> np.ndarray:
        assert self.waste_curve is not None
        opened = (frees > 0) & (frees < 1000)
        rank = np.cumsum(opened[:, ::-1], axis=1)[:, ::-1]
        stranded = opened & (rank > cpu_free // self.share_cpu)
        return np.where(stranded, frees, self.waste_curve[frees]).sum(axis=1)


class WasteCpuReach(CpuReachWastePolicy):
    """``fgd_cpu_waste_reach`` with only opened GPUs in the CPU reach (``_b1``, ``_b4``: the
    expected waste weighed 1 or 4 instead of 2)."""

    name = "trial_waste_cpu_reach"
    tables = OpenedReachWasteTables


class WasteCpuReachOne(WasteCpuReach):
    name = "trial_waste_cpu_reach_b1"
    waste_weight = 1.0


class WasteCpuReachFour(WasteCpuReach):
    name = "trial_waste_cpu_reach_b4"
    waste_weight = 4.0


class WasteWholeReach(CpuReachWastePolicy):
    """``fgd_cpu_waste_reach`` under the name it was tried as (2026-12-01, seeds 52-56)."""

    name = "trial_waste_reach_whole"


class WasteWholeReachFour(CpuReachWastePolicy):
    """``fgd_cpu_waste_reach`` with the expected waste weighed 4 instead of 2."""

    name = "trial_waste_reach_whole_b4"
    waste_weight = 4.0


# Issue 9, third round (2026-12-01): registered from their own module.
import bench.experiments.placement_trials_lookahead  # noqa: E402, F401
