"""Issue 9, third round (2026-12-01): policies tried on the way to ``fgd_cpu_waste_demand``.

Registered by ``bench/experiments/placement_trials.py``, so ``bench/trace_replay.py --trials``
runs them:

    nice .venv/bin/python bench/trace_replay.py --trials --no-results --seeds 52-56 \
        --pods <list> --policies <name>

Alloc % at arrival 100%, seeds 52-56, default list / cpu200_s1 (generator seed 1) unless said;
``fgd_cpu_waste_reach`` there: 95.90 / 94.89.

- ``trial_split_*`` (W weighed g, the free milli of GPUs past the CPU reach weighed s instead
  of W): g4 s2 95.40 (seeds 52-53), g2 s4 95.92 / 92.55, g4 s8 95.91 / 91.94, g3 s3 95.96 /
  94.79 (g4 s4 is ``trial_waste_reach_whole_b4``: 95.99 on 52-53). The CPU-heavy list loses
  whenever the stranded GPUs weigh more.
- ``trial_add_*`` (W weighed g, plus s times f - W(f) for the stranded GPUs): g4 s2 95.96 /
  94.84, g4 s1 95.93 / 94.95, g3 s2 95.95 / 94.90, g6 s2 95.94 / 94.88.
- ``trial_phase_*`` (W's competition 0.05 / idle share**gamma, W recomputed at 13 levels of
  the idle share): gamma 1 95.90 / 95.02, gamma 0.5 95.91 / 95.02.
- ``trial_dyn_*``: W recomputed every 200 placements against the gaps of the cluster and the
  shares still to come (the engine's ``demand_waste_curve``; as many
  shares as the idle GPU milli takes at the mix's mean request, times x). w2 (add g2 s2,
  x 1) 96.04 / 95.01; w4 (add g4 s2, x 1) 96.07 / 95.13, seeds 42-51 default 96.06 (w2:
  96.01). Period 100 / 500 / 1000 (w4): 96.04 / 95.14, 96.04 / 95.09, 96.03 / 95.00. w6
  96.06 / 95.10; w4 with s4 96.04 / 94.92; gaps counted only within CPU reach 96.06 / 95.07.
  Demand x 2 96.03 / 94.93, x 0.5 96.09 / 95.22, x 0.25 96.09 / 95.23, x 0.1 96.08 / 95.26;
  x 0.5 with s1 96.05 / 95.27. On gpushare30_s1 / gpushare70_s1 / multigpu35_s1 /
  gpuspec20_s1 / gpuspec33_s1: w2 95.82 / 90.77 / 97.13 / 95.88 / 94.93, w4 95.85 / 90.82 /
  97.10 / 95.91 / 94.99, x 0.5 95.88 / 90.84 / 97.12 / 95.92 / 95.05, x 0.25 95.86 / 90.89 /
  97.17 / 95.94 / 95.03 (kept: ``trial_dyn_w4_x025`` = ``trial_demand_no_cpu_factor``).
- On ``fgd_cpu_waste_demand`` without its CPU factor, default list: exact (unrounded) delta
  among the best (score, in use) ``trial_demand_exact_ties`` 96.08; weight 3 / 5
  (``trial_demand_w3``, ``_w5``) 96.09 / 96.10: no gain.
- cpu250_s1 (CPU-only pods 2.5 times the default's; every CPU-aware policy loses to fgd
  there): fgd 88.64, fgd_used_first 88.66, fgd_keep_scarce 87.93, fgd_cpu_reach 88.69,
  fgd_cpu_keep_hosts 88.65, trial_waste_cpu_reach 88.75, fgd_cpu_waste 88.56,
  fgd_cpu_waste_reach 88.36; without the CPU factor 88.25; opened GPUs only in the reach
  (``trial_demand_opened_reach``) 88.48 (default 96.08); stranded GPUs weighed by the CPU
  ratio of the cluster (``trial_demand_cpu_whole``, ``_all``) 88.24 / 88.25; W alone
  (``trial_demand_no_reach``) 88.53; CPU-only pods placed as fgd_used_first does
  (``trial_demand_plain_cpu_only``, with opened reach ``trial_demand_opened_plain_cpu_only``)
  88.06 / 88.20; the waste times min(1, free CPU / CPU still to come)**p
  (``trial_demand_cpu_short``, p 2: kept as ``fgd_cpu_waste_demand``'s ``cpu_factor``)
  88.58, p 4 88.57, p 8 88.61; seeds 57-61: fgd 88.83, p 2 88.76, p 8 88.72. On cpu200_s1
  p 2 / p 4: 95.22 / 95.26; on every other list the factor stays 1 (the free CPU is at least
  1.12 times the CPU still to come throughout, seed 52), so the decisions do not change.
"""

from __future__ import annotations

import numpy as np

from scheduling.engine.free_capacity import ClusterState, Demand
from scheduling.engine.model import MILLI_PER_GPU
from scheduling.engine.policies.cpu_aware import CpuReachWastePolicy, StateTables, waste_curve
from scheduling.engine.policies.demand_waste import (
    DemandWastePolicy,
    RecomputedWasteTables,
    demand_waste_curve,
)
from scheduling.engine.policies.fgd import FragmentationGradientPolicy, use_order


class SplitWasteTables(StateTables):
    """``waste``: W(f) of the GPUs in the CPU reach plus ``stranded_weight`` times the free
    milli of those past it. Keeps every row's free GPU milli and free CPU, so the waste can be
    recomputed for another curve (``set_curve``)."""

    stranded_weight = 1.0

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.row_frees = np.zeros((16, 8), dtype=np.int64)
        self.row_cpu = np.zeros(16, dtype=np.int64)
        self.rows_known = 0

    def flush(self) -> None:
        keys = list(self._pending)
        if not keys:
            return
        first = len(self._rows) - len(keys)
        super().flush()
        while len(self._rows) > len(self.row_frees):
            self.row_frees = np.concatenate((self.row_frees, np.zeros_like(self.row_frees)))
            self.row_cpu = np.concatenate((self.row_cpu, np.zeros_like(self.row_cpu)))
        width = self.row_frees.shape[1]
        for i, (_, cpu, frees) in enumerate(keys):
            if frees:
                self.row_frees[first + i, width - len(frees) :] = frees
            self.row_cpu[first + i] = cpu
        self.rows_known = len(self._rows)

    def expected_waste(self, frees: np.ndarray, cpu_free: np.ndarray) -> np.ndarray:
        assert self.waste_curve is not None
        expected = self.waste_curve[frees]
        if not self.share_cpu:
            return expected.sum(axis=1)
        idle = frees > 0
        rank = np.cumsum(idle[:, ::-1], axis=1)[:, ::-1]
        stranded = idle & (rank > cpu_free // self.share_cpu)
        return np.where(stranded, self.stranded_weight * frees, expected).sum(axis=1)

    def set_curve(self, curve: np.ndarray) -> None:
        self.flush()
        self.waste_curve = curve
        n = self.rows_known
        if n:
            self.waste[:n] = self.expected_waste(self.row_frees[:n], self.row_cpu[:n, None])


def _tables(stranded: float) -> type[SplitWasteTables]:
    return type("Tables", (SplitWasteTables,), {"stranded_weight": stranded})


class SplitWaste4(CpuReachWastePolicy):
    """Gaps weighed 4, stranded GPUs 2 (``fgd_cpu_waste_reach``: both 2)."""

    name = "trial_split_g4_s2"
    waste_weight = 4.0
    tables = _tables(0.5)


class SplitWaste3(CpuReachWastePolicy):
    name = "trial_split_g3_s2"
    waste_weight = 3.0
    tables = _tables(2 / 3)


class SplitWaste4s1(CpuReachWastePolicy):
    name = "trial_split_g4_s1"
    waste_weight = 4.0
    tables = _tables(0.25)


class PhaseCompetition(CpuReachWastePolicy):
    """``fgd_cpu_waste_reach`` whose W(f) uses competition ``competition / idle**gamma`` (idle:
    the idle share of the cluster's GPU milli, taken at the levels ``LEVELS``)."""

    name = "trial_phase_g1"
    gamma = 1.0
    tables = _tables(1.0)
    LEVELS = (1.0, 0.7, 0.5, 0.35, 0.25, 0.18, 0.12, 0.08, 0.05, 0.035, 0.025, 0.018, 0.012)

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._level = 0
        self._capacity = 0

    def _phase(self, cluster: ClusterState) -> int:
        if not self._capacity:
            self._capacity = int((cluster.gpu_count * MILLI_PER_GPU).sum()) or 1
        idle = cluster.idle_gpu_milli() / self._capacity
        level = self._level
        while level + 1 < len(self.LEVELS) and idle < self.LEVELS[level + 1]:
            level += 1
        return level

    def table_scores(self, *, cluster: ClusterState, candidates: np.ndarray, demand: Demand):
        tables = self._sync(cluster)
        level = self._phase(cluster)
        if level != self._level:
            self._level = level
            c = self.competition / self.LEVELS[level] ** self.gamma
            curve = waste_curve(tasks=self._mix, weights=self._weights, competition=c)
            tables.set_curve(curve)
            self._score_tables.clear()
        return super().table_scores(cluster=cluster, candidates=candidates, demand=demand)


class PhaseCompetitionHalf(PhaseCompetition):
    name = "trial_phase_g05"
    gamma = 0.5


class PhaseCompetitionTwo(PhaseCompetition):
    name = "trial_phase_g2"
    gamma = 2.0


class SplitWasteCheck(CpuReachWastePolicy):
    name = "trial_split_g4_s4"
    waste_weight = 4.0
    tables = _tables(1.0)


class SplitWasteG2S4(CpuReachWastePolicy):
    name = "trial_split_g2_s4"
    waste_weight = 2.0
    tables = _tables(2.0)


class SplitWasteG4S8(CpuReachWastePolicy):
    name = "trial_split_g4_s8"
    waste_weight = 4.0
    tables = _tables(2.0)


class SplitWasteG3S3(CpuReachWastePolicy):
    name = "trial_split_g3_s3"
    waste_weight = 3.0
    tables = _tables(1.0)


class AddedStrandTables(SplitWasteTables):
    """``waste``: W(f) of every GPU plus ``stranded_weight`` times (f - W(f)) for those past
    the CPU reach (``fgd_cpu_waste_reach``: weight 1 on the same scale)."""

    def expected_waste(self, frees: np.ndarray, cpu_free: np.ndarray) -> np.ndarray:
        assert self.waste_curve is not None
        expected = self.waste_curve[frees]
        idle = frees > 0
        rank = np.cumsum(idle[:, ::-1], axis=1)[:, ::-1]
        stranded = idle & (rank > cpu_free // self.share_cpu)
        return (expected + np.where(stranded, self.stranded_weight * (frees - expected), 0)).sum(1)


def _added(stranded: float) -> type[AddedStrandTables]:
    return type("Tables", (AddedStrandTables,), {"stranded_weight": stranded})


class AddedG4S2(CpuReachWastePolicy):
    name = "trial_add_g4_s2"
    waste_weight = 4.0
    tables = _added(0.5)


class AddedG4S1(CpuReachWastePolicy):
    name = "trial_add_g4_s1"
    waste_weight = 4.0
    tables = _added(0.25)


class AddedG3S2(CpuReachWastePolicy):
    name = "trial_add_g3_s2"
    waste_weight = 3.0
    tables = _added(2 / 3)


class AddedG6S2(CpuReachWastePolicy):
    name = "trial_add_g6_s2"
    waste_weight = 6.0
    tables = _added(1 / 3)


class DynamicWaste(CpuReachWastePolicy):
    """``fgd_cpu_waste_reach`` whose W(f) (``demand_waste_curve``) is recomputed every
    ``period`` placements against the gaps of the cluster and the shares still to come (the
    mix's shares in proportion, as many as the idle GPU milli takes at the mix's mean GPU
    request)."""

    name = "trial_dyn_w2"
    period = 200
    tables = _added(1.0)

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._calls = 0
        share = np.array(
            [t.gpus == 1 and 0 < t.gpu_milli < MILLI_PER_GPU for t in self._mix], dtype=bool
        )
        milli = np.array([t.gpu_milli if t.gpus == 1 else 0 for t in self._mix])
        self._sizes, inverse = np.unique(milli[share], return_inverse=True)
        self._size_weight = np.bincount(
            inverse.reshape(-1), weights=self._weights[share], minlength=len(self._sizes)
        )
        request = np.array([t.gpus * t.gpu_milli if t.gpus else 0 for t in self._mix])
        self._mean_request = max(float(self._weights @ request), 1.0)

    def curve_now(self, cluster: ClusterState) -> np.ndarray:
        frees = cluster.gpu_free[cluster.gpu_free > 0]
        gaps = np.bincount(np.minimum(frees, MILLI_PER_GPU), minlength=MILLI_PER_GPU + 1)
        pods = cluster.idle_gpu_milli() / self._mean_request
        return demand_waste_curve(sizes=self._sizes, expected=self._size_weight * pods, gaps=gaps)

    def table_scores(self, *, cluster: ClusterState, candidates: np.ndarray, demand: Demand):
        tables = self._sync(cluster)
        if self._calls % self.period == 0:
            tables.set_curve(self.curve_now(cluster))
            self._score_tables.clear()
        self._calls += 1
        return super().table_scores(cluster=cluster, candidates=candidates, demand=demand)


class DynamicWaste4(DynamicWaste):
    name = "trial_dyn_w4"
    waste_weight = 4.0
    tables = _added(0.5)


class DynamicWaste4Slow(DynamicWaste4):
    name = "trial_dyn_w4_p500"
    period = 500


class DynamicWaste4Slower(DynamicWaste4):
    name = "trial_dyn_w4_p1000"
    period = 1000


class DynamicWaste4Fast(DynamicWaste4):
    name = "trial_dyn_w4_p100"
    period = 100


class DynamicWaste6(DynamicWaste):
    name = "trial_dyn_w6"
    waste_weight = 6.0
    tables = _added(1 / 3)


class DynamicWaste4S4(DynamicWaste):
    """Gaps weighed 4, and the CPU-stranded GPUs 4 (w4: 2)."""

    name = "trial_dyn_w4_s4"
    waste_weight = 4.0
    tables = _added(1.0)


class DynamicWasteDemandHalf(DynamicWaste4):
    """Half as many shares still to come (``_x2``: twice)."""

    name = "trial_dyn_w4_x05"
    demand_scale = 0.5

    def curve_now(self, cluster: ClusterState) -> np.ndarray:
        frees = cluster.gpu_free[cluster.gpu_free > 0]
        gaps = np.bincount(np.minimum(frees, MILLI_PER_GPU), minlength=MILLI_PER_GPU + 1)
        pods = self.demand_scale * cluster.idle_gpu_milli() / self._mean_request
        return demand_waste_curve(sizes=self._sizes, expected=self._size_weight * pods, gaps=gaps)


class DynamicWasteDemandTwice(DynamicWasteDemandHalf):
    name = "trial_dyn_w4_x2"
    demand_scale = 2.0


class DynamicWasteReachableGaps(DynamicWaste4):
    """The gaps counted only on nodes whose free CPU takes a share of the mix's mean CPU."""

    name = "trial_dyn_w4_cpugaps"

    def curve_now(self, cluster: ClusterState) -> np.ndarray:
        share_cpu = self._state_tables.share_cpu if self._state_tables else 0
        reachable = cluster.cpu_free >= share_cpu
        frees = cluster.gpu_free[reachable]
        frees = frees[frees > 0]
        gaps = np.bincount(np.minimum(frees, MILLI_PER_GPU), minlength=MILLI_PER_GPU + 1)
        pods = cluster.idle_gpu_milli() / self._mean_request
        return demand_waste_curve(sizes=self._sizes, expected=self._size_weight * pods, gaps=gaps)


class DynamicWasteDemandQuarter(DynamicWasteDemandHalf):
    name = "trial_dyn_w4_x025"
    demand_scale = 0.25


class DynamicWasteDemandTenth(DynamicWasteDemandHalf):
    name = "trial_dyn_w4_x01"
    demand_scale = 0.1


class DynamicWasteDemandHalfS1(DynamicWasteDemandHalf):
    """``trial_dyn_w4_x05`` with the CPU-stranded GPUs weighed 1 (2 there)."""

    name = "trial_dyn_w4_x05_s1"
    tables = _added(0.25)


class DemandWasteNoCpuFactor(DemandWastePolicy):
    """``fgd_cpu_waste_demand`` without its CPU factor (as first tried: ``trial_dyn_w4_x025``)."""

    name = "trial_demand_no_cpu_factor"
    cpu_power = 0.0


class DemandWasteExactTies(DemandWasteNoCpuFactor):
    """``trial_demand_no_cpu_factor``; among the nodes of the best (score, in use), the
    largest exact (unrounded) delta first, then ``fgd_used_first``'s order (shares only)."""

    name = "trial_demand_exact_ties"

    def scores(self, *, cluster: ClusterState, candidates: np.ndarray, demand: Demand):
        result = super().scores(cluster=cluster, candidates=candidates, demand=demand)
        if not demand.is_shared:
            return result
        ranked = np.floor(result * 2) / 2
        top = np.flatnonzero(ranked == ranked.max())
        if len(top) < 2:
            return result
        within = (result[top] - ranked[top]) / 0.4
        states = cluster.state_id[candidates[top]]
        unique, inverse = np.unique(states, return_inverse=True)
        if len(unique) < 2:
            return result
        key = Demand(cpu_milli=demand.cpu_milli, gpus=demand.gpus, gpu_milli=demand.gpu_milli)
        outcomes = [self._outcomes(cluster, s, key)[0] for s in unique.tolist()]
        lengths = np.array([len(rows) for rows in outcomes])
        before = np.repeat(self._table_rows[unique], lengths)
        after = np.concatenate(outcomes)
        tables = self._state_tables
        tables.flush()
        delta = (tables.frag[before] - tables.frag[after]) @ self._weights
        delta += self.waste_weight * (tables.waste[before] - tables.waste[after])
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        best = np.maximum.reduceat(delta, starts)[inverse.reshape(-1)]
        levels, rank = np.unique(np.round(best, 6), return_inverse=True)
        order = rank.reshape(-1) + within
        result[top] = ranked[top] + 0.4 * order / len(levels)
        return result


class DemandWasteW3(DemandWasteNoCpuFactor):
    name = "trial_demand_w3"
    waste_weight = 3.0


class DemandWasteW5(DemandWasteNoCpuFactor):
    name = "trial_demand_w5"
    waste_weight = 5.0


class OpenedReachTables(RecomputedWasteTables):
    """Only opened GPUs count in the CPU reach (a whole GPU past it wastes nothing)."""

    whole_scale = 0.0
    opened_scale = 1.0

    def expected_waste(self, frees: np.ndarray, cpu_free: np.ndarray) -> np.ndarray:
        assert self.waste_curve is not None
        expected = self.waste_curve[frees]
        if not self.share_cpu:
            return expected.sum(axis=1)
        idle = frees > 0
        rank = np.cumsum(idle[:, ::-1], axis=1)[:, ::-1]
        stranded = idle & (rank > cpu_free // self.share_cpu)
        scale = np.where(frees >= MILLI_PER_GPU, self.whole_scale, self.opened_scale)
        extra = np.where(stranded, scale * self.stranded_weight * (frees - expected), 0.0)
        return (expected + extra).sum(axis=1)


class DemandWasteOpenedReach(DemandWasteNoCpuFactor):
    name = "trial_demand_opened_reach"
    tables = OpenedReachTables


class ScaledReachTables(OpenedReachTables):
    whole_scale = 1.0


class DemandWasteCpuScarcity(DemandWasteNoCpuFactor):
    """Stranded GPUs (whole ones: ``_whole``; all: ``_all``) weighed by
    min(1, free CPU / (idle GPUs x the mix's mean CPU per share))**2, taken every period."""

    name = "trial_demand_cpu_whole"
    tables = ScaledReachTables
    scale_all = False

    def curve_now(self, cluster: ClusterState) -> np.ndarray:
        tables = self._state_tables
        idle_gpus = cluster.idle_gpu_milli() / MILLI_PER_GPU
        ratio = float(cluster.cpu_free.sum()) / max(idle_gpus * tables.share_cpu, 1.0)
        phi = min(1.0, ratio) ** 2
        tables.whole_scale = phi
        if self.scale_all:
            tables.opened_scale = phi
        return super().curve_now(cluster)


class DemandWasteCpuScarcityAll(DemandWasteCpuScarcity):
    name = "trial_demand_cpu_all"
    scale_all = True


class DemandWasteNoReach(DemandWasteNoCpuFactor):
    """No CPU reach at all: W(f) of every GPU only."""

    name = "trial_demand_no_reach"
    waste_cpu_reach = False


class DemandWastePlainCpuOnly(DemandWasteNoCpuFactor):
    """CPU-only replicas placed as ``fgd_used_first`` places them (FGD's own score)."""

    name = "trial_demand_plain_cpu_only"

    def scores(self, *, cluster: ClusterState, candidates: np.ndarray, demand: Demand):
        if demand.gpus:
            return super().scores(cluster=cluster, candidates=candidates, demand=demand)
        fgd = FragmentationGradientPolicy.scores(
            self, cluster=cluster, candidates=candidates, demand=demand
        )
        in_use, within_use = use_order(cluster, candidates, demand)
        return fgd + 0.5 * in_use + 0.4 * within_use


class DemandWasteOpenedPlainCpuOnly(DemandWastePlainCpuOnly):
    name = "trial_demand_opened_plain_cpu_only"
    tables = OpenedReachTables


class OverallScaleTables(RecomputedWasteTables):
    overall = 1.0

    def expected_waste(self, frees: np.ndarray, cpu_free: np.ndarray) -> np.ndarray:
        return self.overall * super().expected_waste(frees, cpu_free)


class DemandWasteCpuShort(DemandWasteNoCpuFactor):
    """The expected waste weighed by min(1, free CPU / CPU still to come)**power (CPU to come:
    the mix's mean CPU per task times the tasks the idle GPU milli takes at its mean request):
    when CPU runs short, a gap is lost for want of CPU, whatever fills it."""

    name = "trial_demand_cpu_short"
    tables = OverallScaleTables
    power = 2.0  # kept in fgd_cpu_waste_demand (its cpu_factor)

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        cpu = np.array([t.cpu_milli for t in self._mix], dtype=float)
        self._mean_cpu = float(self._weights @ cpu) if len(cpu) else 0.0
        self.phis: list[float] = []

    def curve_now(self, cluster: ClusterState) -> np.ndarray:
        tasks = cluster.idle_gpu_milli() / self._mean_request
        ratio = float(cluster.cpu_free.sum()) / max(tasks * self._mean_cpu, 1.0)
        phi = min(1.0, ratio) ** self.power
        self.phis.append(round(ratio, 2))
        self._state_tables.overall = phi
        return super().curve_now(cluster)


class DemandWasteCpuShort4(DemandWasteCpuShort):
    name = "trial_demand_cpu_short4"
    power = 4.0


class DemandWasteCpuShort8(DemandWasteCpuShort):
    name = "trial_demand_cpu_short8"
    power = 8.0
