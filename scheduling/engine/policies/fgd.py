"""FGD, the FGD paper's policy, and ours built on it.

FGD scores like the paper's baselines: an integer from 0 to 100, and the smallest node name
wins a tie. ``fgd_small_first``, ``fgd_used_first`` and ``fgd_keep_scarce`` are ours: FGD's
score with a different choice among equal scores.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Self

import numpy as np

from ..fragmentation import FragmentationModel
from ..free_capacity import ClusterState, Demand
from ..model import MILLI_PER_GPU, TaskType
from .base import MAX_SCORE, PlacementPolicy, PolicyContext, idle_gpu_milli


def _sigmoid_score(delta: float) -> int:
    return int(MAX_SCORE / (1.0 + math.exp(-delta / 1000)))


class FragmentationGradientPolicy(PlacementPolicy):
    """FGD: the node whose fragmentation (against the expected workload) grows least.

    Scores are memoised per (node state, replica shape): a placement changes one node, so
    almost every node keeps its state, and its score, from one replica to the next.
    """

    name = "fgd"

    def __init__(self, *, workload: Sequence[tuple[TaskType, float]]) -> None:
        self._workload = tuple(workload)
        self._model: FragmentationModel | None = None
        self._tables: dict[Demand, np.ndarray] = {}

    @classmethod
    def from_context(cls, context: PolicyContext) -> Self:
        return cls(workload=context.workload)

    def model(self, cluster: ClusterState) -> FragmentationModel:
        if self._model is None:
            self._model = FragmentationModel(
                workload=self._workload, class_names=cluster.class_names
            )
        return self._model

    def scores(
        self, *, cluster: ClusterState, candidates: np.ndarray, demand: Demand
    ) -> np.ndarray:
        key = Demand(cpu_milli=demand.cpu_milli, gpus=demand.gpus, gpu_milli=demand.gpu_milli)
        table = self._tables.get(key)
        states = cluster.state_id[candidates]
        if table is None or len(table) < len(cluster.state_keys):
            grown = np.full(len(cluster.state_keys) * 2 + 16, np.nan)
            if table is not None:
                grown[: len(table)] = table
            table = self._tables[key] = grown
        values = table[states]
        missing = np.isnan(values)
        if missing.any():
            for state in np.unique(states[missing]).tolist():
                table[state] = max(self._choices(cluster, state, key).values())
            values = table[states]
        return values

    def choose_gpus(self, *, cluster: ClusterState, node: int, demand: Demand) -> tuple[int, ...]:
        if not demand.is_shared:
            return cluster.best_fit_gpus(demand=demand, node=node)
        choices = self._choices(cluster, int(cluster.state_id[node]), demand)
        best = max(choices.values())
        frees = cluster.gpu_free[node].tolist()
        return (next(i for i, free in enumerate(frees) if choices.get(free) == best),)

    def _choices(self, cluster: ClusterState, state: int, demand: Demand) -> dict[int, float]:
        """Score per free amount of the GPU a replica could go to, on a node in ``state``
        (one entry, keyed 0, for replicas that do not share a GPU)."""
        model = self.model(cluster)
        class_id, cpu_free, frees = cluster.state_keys[state]
        before = model.fragmentation((class_id, cpu_free, frees))
        cpu_after = cpu_free - demand.cpu_milli
        if not demand.is_shared:
            after = _take(frees, MILLI_PER_GPU, demand.gpus) if demand.gpus else frees
            return {0: self._score(before, model.fragmentation((class_id, cpu_after, after)))}
        return {
            free: self._score(
                before,
                model.fragmentation(
                    (class_id, cpu_after, _take(frees, free, 1, share=demand.gpu_milli))
                ),
            )
            for free in set(frees)
            if free >= demand.gpu_milli
        }

    def _score(self, before: float, after: float) -> float:
        return float(_sigmoid_score(before - after))


def _take(
    frees: tuple[int, ...], free: int, count: int, *, share: int | None = None
) -> tuple[int, ...]:
    """Sorted free list after taking ``share`` (default: all) from ``count`` GPUs at ``free``."""
    result = list(frees)
    for _ in range(count):
        position = result.index(free)
        result[position] = free - (free if share is None else share)
    return tuple(sorted(result))


def _fewer_gpus_first(cluster: ClusterState, candidates: np.ndarray) -> np.ndarray:
    """A fraction in (0, 1) that grows as a node has fewer GPUs."""
    return 1.0 - cluster.gpu_count[candidates] / (cluster.gpu_free.shape[1] + 1)


def use_order(
    cluster: ClusterState, candidates: np.ndarray, demand: Demand
) -> tuple[np.ndarray, np.ndarray]:
    """``fgd_used_first``'s order among equal scores: (node in use, a fraction below one
    ordering nodes of equal use) per candidate."""
    idle = idle_gpu_milli(cluster, candidates)
    in_use = idle < cluster.gpu_count[candidates] * MILLI_PER_GPU
    if not demand.gpus:
        within_use = 1.0 - idle / (cluster.gpu_free.shape[1] * MILLI_PER_GPU + 1)
    elif demand.is_shared:
        within_use = _fewer_gpus_first(cluster, candidates)
    else:
        within_use = np.zeros(len(candidates))
    return in_use, within_use


class SmallNodesFirstFragmentationPolicy(FragmentationGradientPolicy):
    """Ours: FGD's integer score, and among equal scores the node with the fewest GPUs.

    Small nodes soak up the small work FGD is indifferent about, which keeps large nodes
    whole for large replicas; measured in bench/RESULTS.md against the paper's FGD.
    """

    name = "fgd_small_first"

    def scores(
        self, *, cluster: ClusterState, candidates: np.ndarray, demand: Demand
    ) -> np.ndarray:
        fgd = super().scores(cluster=cluster, candidates=candidates, demand=demand)
        # Scores are integers, so a fraction below one only ever breaks ties.
        return fgd + _fewer_gpus_first(cluster, candidates)


class UsedNodesFirstFragmentationPolicy(FragmentationGradientPolicy):
    """Ours: FGD's integer score; among equal scores a node already in use before an untouched
    one, then CPU-only replicas to the node with the fewest idle GPUs and GPU shares to the
    node with the fewest GPUs.

    An untouched node is the only home of a whole-node replica, CPU next to no idle GPU is
    worth nothing to GPU work, and small nodes soak up shares; FGD's coarse score cannot see
    these, so it leaves them to the node order. Measured in bench/RESULTS.md.
    """

    name = "fgd_used_first"

    def scores(
        self, *, cluster: ClusterState, candidates: np.ndarray, demand: Demand
    ) -> np.ndarray:
        fgd = super().scores(cluster=cluster, candidates=candidates, demand=demand)
        in_use, within_use = self._use_order(cluster, candidates, demand)
        # Both fractions stay below one together, so they only order nodes of equal score.
        return fgd + 0.5 * in_use + 0.4 * within_use

    def _use_order(
        self, cluster: ClusterState, candidates: np.ndarray, demand: Demand
    ) -> tuple[np.ndarray, np.ndarray]:
        return use_order(cluster, candidates, demand)


class ScarceNodesKeptFragmentationPolicy(UsedNodesFirstFragmentationPolicy):
    """Ours: ``fgd_used_first``, with one more tie-break between its two: among equal FGD
    scores a node in use first, then the node whose loss matters least to the rare task
    types, then ``fgd_used_first``'s order within use.

    FGD's target workload leaves out the rare types (the 5% of tasks past its coverage), such
    as 8-GPU tasks asking 120 cores that only a few untouched large nodes can host. The loss
    of a node is, over the rare types it could host before the replica and not after, the
    type's share of all tasks times its GPU request, divided by the square of the number of
    nodes that can host it now: the scarcer the type, the more its last homes are worth.
    Measured in bench/RESULTS.md.
    """

    name = "fgd_keep_scarce"

    def __init__(
        self,
        *,
        workload: Sequence[tuple[TaskType, float]],
        rare_workload: Sequence[tuple[TaskType, float]],
    ) -> None:
        super().__init__(workload=workload)
        # CPU-only types are left out: a node lost to them strands no GPU.
        rare = [(task, share) for task, share in rare_workload if task.gpus]
        self._rare = tuple(task for task, _ in rare)
        self._rare_request = np.array([share * task.gpus * task.gpu_milli for task, share in rare])
        self._rare_cpu = np.array([task.cpu_milli for task in self._rare], dtype=np.int64)
        self._rare_gpus = np.array([task.gpus for task in self._rare], dtype=np.int64)
        self._rare_milli = np.array([task.gpu_milli for task in self._rare], dtype=np.int64)
        self._class_allowed: np.ndarray | None = None
        # Which rare types fit a node state, one row per state seen (the cluster's or after a
        # replica), and the row of each cluster state and of each (demand, state) outcome.
        self._fit_rows: dict[tuple[int, int, tuple[int, ...]], int] = {}
        self._fits = np.zeros((0, len(self._rare)), dtype=bool)
        self._row_of_state = np.zeros(0, dtype=np.int64)
        self._row_after: dict[tuple[Demand, int], int] = {}

    @classmethod
    def from_context(cls, context: PolicyContext) -> Self:
        return cls(workload=context.workload, rare_workload=context.rare_workload)

    def scores(
        self, *, cluster: ClusterState, candidates: np.ndarray, demand: Demand
    ) -> np.ndarray:
        fgd = self.fgd_scores(cluster=cluster, candidates=candidates, demand=demand)
        in_use, within_use = self._use_order(cluster, candidates, demand)
        ranked = fgd + 0.5 * in_use
        result = ranked + 0.4 * within_use
        top = np.flatnonzero(ranked == ranked.max())
        if len(top) < 2:
            return result
        loss = self._rare_loss(cluster, candidates[top], demand)
        if not loss.any():
            return result
        # Among the best (score, in use), the least loss first, then the order within use:
        # loss levels ranked densely plus the within-use fraction, scaled below the 0.5 gap
        # that separates them from every other candidate.
        levels, loss_rank = np.unique(loss, return_inverse=True)
        order = (len(levels) - 1 - loss_rank.reshape(-1)) + within_use[top]
        result[top] = ranked[top] + 0.4 * order / len(levels)
        return result

    def fgd_scores(
        self, *, cluster: ClusterState, candidates: np.ndarray, demand: Demand
    ) -> np.ndarray:
        """The score the order among equals applies to (FGD's, here)."""
        return FragmentationGradientPolicy.scores(
            self, cluster=cluster, candidates=candidates, demand=demand
        )

    def _rare_loss(
        self, cluster: ClusterState, candidates: np.ndarray, demand: Demand
    ) -> np.ndarray:
        if not len(self._rare):
            return np.zeros(len(candidates))
        self._sync_states(cluster)
        hosts = self._fits[self._row_of_state[cluster.state_id]].sum(axis=0)
        hosted = np.flatnonzero(hosts)
        if not len(hosted):
            return np.zeros(len(candidates))
        weight = self._rare_request[hosted] / hosts[hosted] ** 2
        states = cluster.state_id[candidates].tolist()
        after_rows = [self._after(cluster, state, demand) for state in states]
        before = self._fits[self._row_of_state[states]][:, hosted]
        after = self._fits[after_rows][:, hosted]
        return (before & ~after) @ weight

    def _sync_states(self, cluster: ClusterState) -> None:
        known = len(self._row_of_state)
        if known < len(cluster.state_keys):
            rows = [self._row(cluster, key) for key in cluster.state_keys[known:]]
            self._row_of_state = np.concatenate((self._row_of_state, rows)).astype(np.int64)

    def _after(self, cluster: ClusterState, state: int, demand: Demand) -> int:
        row = self._row_after.get((demand, state))
        if row is None:
            class_id, cpu_free, frees = cluster.state_keys[state]
            if demand.is_shared:
                # The fullest GPU the share fits on, as best fit would take it.
                fullest = min(free for free in frees if free >= demand.gpu_milli)
                frees = _take(frees, fullest, 1, share=demand.gpu_milli)
            elif demand.gpus:
                frees = _take(frees, MILLI_PER_GPU, demand.gpus)
            row = self._row(cluster, (class_id, cpu_free - demand.cpu_milli, frees))
            self._row_after[(demand, state)] = row
        return row

    def _row(self, cluster: ClusterState, key: tuple[int, int, tuple[int, ...]]) -> int:
        row = self._fit_rows.get(key)
        if row is not None:
            return row
        if self._class_allowed is None:
            self._class_allowed = np.array(
                [
                    [task.gpu_classes is None or name in task.gpu_classes for task in self._rare]
                    for name in cluster.class_names
                ],
                dtype=bool,
            ).reshape(len(cluster.class_names), len(self._rare))
        class_id, cpu_free, frees = key
        usable = len(frees) - np.searchsorted(frees, self._rare_milli)
        fits = (
            self._class_allowed[class_id]
            & (cpu_free >= self._rare_cpu)
            & (usable >= self._rare_gpus)
        )
        row = self._fit_rows[key] = len(self._fit_rows)
        if row >= len(self._fits):
            grown = np.zeros((2 * row + 16, len(self._rare)), dtype=bool)
            grown[:row] = self._fits[:row]
            self._fits = grown
        self._fits[row] = fits
        return row
