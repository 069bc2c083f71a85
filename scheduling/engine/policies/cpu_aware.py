"""Ours: FGD whose fragmentation counts the GPU that the node's free CPU leaves out of reach.

FGD's F_n(m) asks only whether one task of type m fits node n: a node with eight idle GPUs
and twelve free cores shows no fragmentation to a GPU share asking eleven cores, though seven
of those GPUs will never host one. GPU-sharing tasks ask the most CPU per GPU in the trace
(13 cores against 12 per GPU on its most common node), so for sharing types
``fgd_cpu_reach`` also counts as fragmented every GPU past the number of shares the node's
free CPU allows. The score stays FGD's integer one; equal scores go to ``fgd_used_first``'s
order. ``fgd_cpu_waste_reach`` also counts the idle milli the node's GPUs are expected to
end with (``waste_curve``; all their free milli past the node's CPU reach). Measured in
bench/RESULTS.md ("Placement beyond FGD"), with the variants tried
(bench/experiments/placement_trials.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Self

import numpy as np

from ..free_capacity import ClusterState, Demand
from ..model import MILLI_PER_GPU, TaskType
from .base import MAX_SCORE, PlacementPolicy, PolicyContext
from .fgd import ScarceNodesKeptFragmentationPolicy, _take, use_order

StateKey = tuple[int, int, tuple[int, ...]]
# How fragmentation is counted for a type that fits the node: "plain" (the paper's: free milli
# of the GPUs whose free share is below the type's), "reach" (also every GPU past the number
# of tasks the free CPU allows, the freest kept), "capacity" (all free milli but what the
# tasks that fit, by GPU and by CPU, would take).


def waste_curve(
    *, tasks: Sequence[TaskType], weights: np.ndarray, competition: float
) -> np.ndarray:
    """W(f) for f = 0..1,000: the milli-GPU a GPU with ``f`` free is expected to end with
    idle, if it is filled at all with probability P_f / (P_f + ``competition``) and then by a
    share that fits, each in proportion to its popularity (P_f: the popularity, among the
    GPU types, of the shares that fit f). A whole GPU counts 0: only opened GPUs waste.

    FGD asks only whether a type fits a gap; W also asks how well: a 530 gap takes a 470
    and ends at 60, a 210 gap waits for the rare shares of 160 or less.
    """
    sizes = np.array([t.gpu_milli if t.gpus == 1 else 0 for t in tasks], dtype=np.int64)
    share = (sizes > 0) & (sizes < MILLI_PER_GPU)
    gpu_weight = max(float(weights[np.array([t.gpus > 0 for t in tasks], dtype=bool)].sum()), 1e-12)
    sizes, popularity = sizes[share], weights[share] / gpu_weight
    curve = np.zeros(MILLI_PER_GPU + 1)
    for free in range(1, MILLI_PER_GPU):
        fits = sizes <= free
        fitting = float(popularity[fits].sum())
        if not fitting:
            curve[free] = free
            continue
        after = float(popularity[fits] @ curve[free - sizes[fits]]) / fitting
        filled = fitting / (fitting + competition)
        curve[free] = (1 - filled) * free + filled * after
    return curve


class StateTables:
    """Per node state ``(class id, free CPU, sorted free GPU milli)`` and per task type: the
    fragmentation F_n(m) in milli-GPU and how many tasks of the type the node can take; per
    state, the expected waste of its GPUs (``waste``, when ``waste_curve`` is given: its
    W(f) for the GPUs within reach of ``share_cpu`` milli-CPU each, the freest first, and
    all their free milli for the others; W(f) for all when ``share_cpu`` is 0).

    ``row`` hands out a state's row at once; ``flush`` computes every new row in one batch."""

    def __init__(
        self,
        *,
        tasks: Sequence[TaskType],
        class_names: Sequence[str],
        share_mode: str = "plain",
        whole_mode: str = "plain",
        waste_curve: np.ndarray | None = None,
        share_cpu: int = 0,
    ) -> None:
        self.share_mode = share_mode
        self.whole_mode = whole_mode
        self.waste_curve = waste_curve
        self.share_cpu = share_cpu
        self.cpu = np.array([t.cpu_milli for t in tasks], dtype=np.int64)
        self.gpus = np.array([t.gpus for t in tasks], dtype=np.int64)
        self.milli = np.array([t.gpu_milli if t.gpus else 0 for t in tasks], dtype=np.int64)
        self.shared = (self.gpus == 1) & (self.milli > 0) & (self.milli < MILLI_PER_GPU)
        self.allowed = np.array(
            [
                [t.gpu_classes is None or name in t.gpu_classes for t in tasks]
                for name in class_names
            ],
            dtype=bool,
        ).reshape(len(class_names), len(tasks))
        self._rows: dict[StateKey, int] = {}
        self._pending: list[StateKey] = []
        self.frag = np.zeros((16, len(tasks)))
        self.capacity = np.zeros((16, len(tasks)))
        self.waste = np.zeros(16)

    def row(self, key: StateKey) -> int:
        row = self._rows.get(key)
        if row is None:
            row = self._rows[key] = len(self._rows)
            self._pending.append(key)
        return row

    def flush(self) -> None:
        if not self._pending:
            return
        keys, self._pending = self._pending, []
        first = len(self._rows) - len(keys)
        while len(self._rows) > len(self.frag):
            self.frag = np.concatenate((self.frag, np.zeros_like(self.frag)))
            self.capacity = np.concatenate((self.capacity, np.zeros_like(self.capacity)))
            self.waste = np.concatenate((self.waste, np.zeros_like(self.waste)))
        width = max(len(frees) for _, _, frees in keys)
        # Free GPU milli ascending, padded in front with zeros (which count for nothing).
        frees = np.zeros((len(keys), width), dtype=np.int64)
        for i, (_, _, free_list) in enumerate(keys):
            if free_list:
                frees[i, width - len(free_list) :] = free_list
        class_id = np.array([key[0] for key in keys])
        cpu_free = np.array([key[1] for key in keys])[:, None]
        below = np.concatenate((np.zeros((len(keys), 1), dtype=np.int64), frees.cumsum(axis=1)), 1)
        idle = below[:, -1:]
        milli = np.maximum(self.milli, 1)[None, None, :]
        usable = (frees[:, :, None] >= milli).sum(axis=1)
        shares = (frees[:, :, None] // milli).sum(axis=1)
        runs = self.allowed[class_id] & (cpu_free >= self.cpu) & (self.milli > 0)
        fits = runs & (usable >= self.gpus)
        by_cpu = np.where(self.cpu > 0, cpu_free // np.maximum(self.cpu, 1), 1 << 20)
        whole = usable // np.maximum(self.gpus, 1)
        parts = {
            "below": below,
            "idle": idle,
            "usable": usable,
            "shares": shares,
            "by_cpu": by_cpu,
            "reach": np.where(
                self.shared, np.minimum(usable, by_cpu), np.minimum(whole, by_cpu) * self.gpus
            ),
        }
        fragmented = np.where(
            self.shared,
            self.fragmented(self.share_mode, **parts),
            self.fragmented(self.whole_mode, **parts),
        )
        rows = slice(first, first + len(keys))
        self.frag[rows] = np.where(fits, fragmented, idle)
        tasks = np.minimum(by_cpu, np.where(self.shared, shares, whole))
        self.capacity[rows] = np.where(runs, tasks, 0)
        if self.waste_curve is not None:
            self.waste[rows] = self.expected_waste(frees, cpu_free)

    def expected_waste(self, frees: np.ndarray, cpu_free: np.ndarray) -> np.ndarray:
        """``waste`` of each state from its ascending free GPU milli and free CPU."""
        assert self.waste_curve is not None
        expected = self.waste_curve[frees]
        if not self.share_cpu:
            return expected.sum(axis=1)
        idle = frees > 0
        rank = np.cumsum(idle[:, ::-1], axis=1)[:, ::-1]  # 1: the freest GPU
        stranded = idle & (rank > cpu_free // self.share_cpu)
        return np.where(stranded, frees, expected).sum(axis=1)

    def fragmented(
        self,
        mode: str,
        *,
        below: np.ndarray,
        idle: np.ndarray,
        usable: np.ndarray,
        shares: np.ndarray,
        by_cpu: np.ndarray,
        reach: np.ndarray,
    ) -> np.ndarray:
        """F_n(m) per (new state, type) for the types that fit, counted as ``mode`` says;
        ``below[:, k]``: the free milli of the k least free GPU slots (GPU lists padded in
        front to one width)."""
        width = below.shape[1] - 1
        batch = np.arange(len(below))[:, None]
        if mode == "plain":
            return below[batch, width - usable]
        if mode == "reach":
            return below[batch, width - reach]
        if mode == "capacity":
            return idle - np.minimum(shares, by_cpu) * self.milli
        raise ValueError(f"unknown fragmentation mode {mode!r}")


class TableScores:
    """FGD's integer score from ``StateTables`` against a weighted mix: memoised per (replica
    shape, node state) until the weights change (``reweigh``, every ``epoch`` placements;
    never when ``epoch`` is 0). A mixin for a ``PlacementPolicy``."""

    share_mode: ClassVar[str] = "plain"
    whole_mode: ClassVar[str] = "plain"
    epoch: ClassVar[int] = 0
    scale: ClassVar[float] = 1000.0  # milli-GPU of fragmentation per sigmoid unit (FGD's)
    tables: ClassVar[type[StateTables]] = StateTables
    # Milli-GPU of fragmentation per milli of expected waste added to the score's delta (0:
    # FGD's delta alone), ``waste_curve``'s competition, and whether GPUs past the CPU reach
    # of the mix's mean share count as wasted.
    waste_weight: ClassVar[float] = 0.0
    competition: ClassVar[float] = 0.05
    waste_cpu_reach: ClassVar[bool] = True

    def _init_tables(self, workload: Sequence[tuple[TaskType, float]]) -> None:
        self._mix = tuple(task for task, _ in workload)
        self._popularity = np.array([weight for _, weight in workload], dtype=float)
        self._weights = self._popularity / max(self._popularity.sum(), 1e-12)
        self._state_tables: StateTables | None = None
        self._table_rows = np.zeros(0, dtype=np.int64)
        self._outcome_rows: dict[tuple[Demand, int], tuple[np.ndarray, tuple[int, ...]]] = {}
        self._score_tables: dict[Demand, np.ndarray] = {}
        self._placements = 0

    def reweigh(self, cluster: ClusterState, tables: StateTables) -> np.ndarray:
        """The mix's weights for the cluster as it is (FGD's: the popularity)."""
        return self._weights

    def _sync(self, cluster: ClusterState) -> StateTables:
        if self._state_tables is None:
            self._state_tables = self.tables(
                tasks=self._mix,
                class_names=cluster.class_names,
                share_mode=self.share_mode,
                whole_mode=self.whole_mode,
                **self._waste_parts(),
            )
        known = len(self._table_rows)
        if known < len(cluster.state_keys):
            rows = [self._state_tables.row(key) for key in cluster.state_keys[known:]]
            self._table_rows = np.concatenate((self._table_rows, rows)).astype(np.int64)
        return self._state_tables

    def _waste_parts(self) -> dict:
        """``StateTables``' waste arguments: none unless the score counts waste."""
        if not self.waste_weight:
            return {}
        curve = waste_curve(tasks=self._mix, weights=self._weights, competition=self.competition)
        if not self.waste_cpu_reach:
            return {"waste_curve": curve}
        shares = np.array([t.gpus == 1 and 0 < t.gpu_milli < MILLI_PER_GPU for t in self._mix])
        weights = np.where(shares, self._weights, 0.0)
        cpu = np.array([t.cpu_milli for t in self._mix])
        mean_cpu = float(weights @ cpu) / max(float(weights.sum()), 1e-12)
        return {"waste_curve": curve, "share_cpu": max(int(mean_cpu), 1)}

    def _outcomes(
        self, cluster: ClusterState, state: int, demand: Demand
    ) -> tuple[np.ndarray, tuple[int, ...]]:
        """Rows of the states a replica can leave a node in ``state`` in and, for a share, the
        free milli of the GPU it takes in each (empty otherwise)."""
        found = self._outcome_rows.get((demand, state))
        if found is not None:
            return found
        tables = self._sync(cluster)
        class_id, cpu_free, frees = cluster.state_keys[state]
        cpu_after = cpu_free - demand.cpu_milli
        if demand.is_shared:
            options = tuple(sorted({f for f in frees if f >= demand.gpu_milli}))
            rows = [
                tables.row((class_id, cpu_after, _take(frees, f, 1, share=demand.gpu_milli)))
                for f in options
            ]
        else:
            options = ()
            after = _take(frees, MILLI_PER_GPU, demand.gpus) if demand.gpus else frees
            rows = [tables.row((class_id, cpu_after, after))]
        found = self._outcome_rows[(demand, state)] = (np.array(rows, dtype=np.int64), options)
        return found

    def _integer_scores(self, before: np.ndarray, after: np.ndarray) -> np.ndarray:
        tables = self._state_tables
        assert tables is not None
        tables.flush()
        delta = (tables.frag[before] - tables.frag[after]) @ self._weights
        if self.waste_weight:
            delta += self.waste_weight * (tables.waste[before] - tables.waste[after])
        return np.floor(MAX_SCORE / (1.0 + np.exp(-delta / self.scale)))

    def table_scores(
        self, *, cluster: ClusterState, candidates: np.ndarray, demand: Demand
    ) -> np.ndarray:
        """FGD's integer score of each candidate: its best over the GPUs a share could take."""
        tables = self._sync(cluster)
        if self.epoch and self._placements % self.epoch == 0:
            tables.flush()
            self._weights = self.reweigh(cluster, tables)
            self._score_tables.clear()
        self._placements += 1
        key = Demand(cpu_milli=demand.cpu_milli, gpus=demand.gpus, gpu_milli=demand.gpu_milli)
        table = self._score_tables.get(key)
        if table is None or len(table) < len(cluster.state_keys):
            grown = np.full(len(cluster.state_keys) * 2 + 16, np.nan)
            if table is not None:
                grown[: len(table)] = table
            table = self._score_tables[key] = grown
        states = cluster.state_id[candidates]
        values = table[states]
        missing = np.isnan(values)
        if missing.any():
            todo = np.unique(states[missing])
            outcomes = [self._outcomes(cluster, s, key)[0] for s in todo.tolist()]
            lengths = np.array([len(rows) for rows in outcomes])
            before = np.repeat(self._table_rows[todo], lengths)
            flat = self._integer_scores(before, np.concatenate(outcomes))
            starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
            table[todo] = np.maximum.reduceat(flat, starts)
            values = table[states]
        return values

    def choose_gpus(self, *, cluster: ClusterState, node: int, demand: Demand) -> tuple[int, ...]:
        if not demand.is_shared:
            return cluster.best_fit_gpus(demand=demand, node=node)
        state = int(cluster.state_id[node])
        rows, options = self._outcomes(cluster, state, demand)
        scored = self._integer_scores(np.full(len(rows), self._table_rows[state]), rows)
        best = {free for free, score in zip(options, scored, strict=True) if score == scored.max()}
        # The lowest-numbered GPU among the best, as fgd takes it.
        return (next(i for i, free in enumerate(cluster.gpu_free[node].tolist()) if free in best),)


class CpuReachFragmentationPolicy(TableScores, PlacementPolicy):
    """Ours: FGD's integer score where a GPU-sharing type's fragmentation also counts every
    GPU past the number of its shares the node's free CPU allows (the freest GPUs kept);
    equal scores go to ``fgd_used_first``'s order."""

    name = "fgd_cpu_reach"
    share_mode = "reach"

    def __init__(self, *, workload: Sequence[tuple[TaskType, float]]) -> None:
        self._init_tables(workload)

    @classmethod
    def from_context(cls, context: PolicyContext) -> Self:
        return cls(workload=context.workload)

    def scores(
        self, *, cluster: ClusterState, candidates: np.ndarray, demand: Demand
    ) -> np.ndarray:
        fgd = self.table_scores(cluster=cluster, candidates=candidates, demand=demand)
        in_use, within_use = use_order(cluster, candidates, demand)
        # Both fractions stay below one together, so they only order nodes of equal score.
        return fgd + 0.5 * in_use + 0.4 * within_use


class CpuReachHostsKeptPolicy(TableScores, ScarceNodesKeptFragmentationPolicy):
    """Ours: ``fgd_cpu_reach``, less ``penalty`` points on a node that is one of the last
    hosts of a rare type (a type past FGD's target mix that at most ``scarce_share`` of the
    nodes can host now) and would stop hosting it.

    Counting CPU draws CPU-heavy work to CPU-rich nodes, which are the only homes of some rare
    types (8 GPUs and 120 cores: the 39 G3 nodes of the trace; or a type pinned to a GPU model
    few nodes have): a tie-break cannot keep them, as the scores differ. The rare types are
    ``fgd_keep_scarce``'s; its order among equal scores is not used.
    """

    name = "fgd_cpu_keep_hosts"
    share_mode = "reach"
    penalty = 5.0
    scarce_share = 1 / 16

    def __init__(
        self,
        *,
        workload: Sequence[tuple[TaskType, float]],
        rare_workload: Sequence[tuple[TaskType, float]],
    ) -> None:
        super().__init__(workload=workload, rare_workload=rare_workload)
        self._init_tables(workload)
        self._hosts = np.zeros(len(self._rare), dtype=np.int64)
        self._hosts_of = np.zeros(0, dtype=np.int64)  # the state id each node was counted in

    def scores(
        self, *, cluster: ClusterState, candidates: np.ndarray, demand: Demand
    ) -> np.ndarray:
        fgd = self.table_scores(cluster=cluster, candidates=candidates, demand=demand)
        in_use, within_use = use_order(cluster, candidates, demand)
        result = fgd + 0.5 * in_use + 0.4 * within_use
        if not len(self._rare):
            return result
        hosts = self._count_hosts(cluster)
        scarce = np.flatnonzero((hosts > 0) & (hosts <= self.scarce_share * len(cluster)))
        if not len(scarce):
            return result
        states = cluster.state_id[candidates]
        rows = self._row_of_state[states]
        hosting = np.flatnonzero(self._fits[rows[:, None], scarce[None, :]].any(axis=1))
        if not len(hosting):
            return result
        unique, inverse = np.unique(states[hosting], return_inverse=True)
        after_rows = [self._after(cluster, state, demand) for state in unique.tolist()]
        before = self._fits[self._row_of_state[unique][:, None], scarce[None, :]]
        after = self._fits[np.array(after_rows)[:, None], scarce[None, :]]
        lost = (before & ~after).any(axis=1)[inverse.reshape(-1)]
        result[hosting[lost]] -= self.penalty
        return result

    def _count_hosts(self, cluster: ClusterState) -> np.ndarray:
        """Nodes that can host each rare type now, updated for the nodes whose state moved."""
        self._sync_states(cluster)
        if len(self._hosts_of) != len(cluster):
            self._hosts_of = cluster.state_id.copy()
            self._hosts = self._fits[self._row_of_state[self._hosts_of]].sum(axis=0)
            return self._hosts
        moved = np.flatnonzero(self._hosts_of != cluster.state_id)
        if len(moved):
            self._hosts -= self._fits[self._row_of_state[self._hosts_of[moved]]].sum(axis=0)
            self._hosts += self._fits[self._row_of_state[cluster.state_id[moved]]].sum(axis=0)
            self._hosts_of[moved] = cluster.state_id[moved]
        return self._hosts


class CpuReachWastePolicy(CpuReachHostsKeptPolicy):
    """Ours: ``fgd_cpu_keep_hosts`` whose fragmentation delta also counts twice the change in
    the expected waste of the node's GPUs: W(f) (``waste_curve``; 0 for a whole GPU) for
    those the node's free CPU can still serve (at the mix's mean CPU per share, the freest
    first), all their free milli for the others. A share goes, node and GPU, where its
    leftover is likely to be filled well; any replica avoids taking the CPU that idle GPUs
    need."""

    name = "fgd_cpu_waste_reach"
    waste_weight = 2.0
