"""Placement policies: which node (and which GPUs on it) one replica goes to.

The six baselines follow the FGD paper's simulator (hkust-adsl/kubernetes-scheduler-simulator):
every score is an integer from 0 to 100 and the smallest node name wins a tie, because those
coarse scores are what its published numbers come from. ``fgd_small_first``,
``fgd_used_first`` and ``fgd_keep_scarce`` are ours: FGD's score with a different choice
among equal scores.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from .cluster import ClusterState, Demand
from .fragmentation import FragmentationModel
from .model import MILLI_PER_GPU, TaskType

MAX_SPEC_CPU_MILLI = 128_000  # the paper's normalisers: the biggest node it knew
MAX_SPEC_GPU_MILLI = 8_000
MAX_SCORE = 100


class PlacementPolicy(ABC):
    """Scores candidate nodes; the highest wins, then the smallest name (lowest index)."""

    name = "base"

    @abstractmethod
    def scores(
        self, *, cluster: ClusterState, candidates: np.ndarray, demand: Demand
    ) -> np.ndarray:
        """One number per candidate node; higher is better."""

    def choose_node(self, *, cluster: ClusterState, candidates: np.ndarray, demand: Demand) -> int:
        scores = self.scores(cluster=cluster, candidates=candidates, demand=demand)
        return int(candidates[int(np.argmax(scores))])

    def choose_gpus(self, *, cluster: ClusterState, node: int, demand: Demand) -> tuple[int, ...]:
        return cluster.best_fit_gpus(demand=demand, node=node)


def _idle_gpu_milli(cluster: ClusterState, candidates: np.ndarray) -> np.ndarray:
    return np.maximum(cluster.gpu_free[candidates], 0).sum(axis=1)


class RandomPolicy(PlacementPolicy):
    """Any node that fits, uniformly at random from a seeded generator."""

    name = "random"

    def __init__(self, *, seed: int) -> None:
        self._rng = np.random.default_rng(seed)

    def scores(
        self, *, cluster: ClusterState, candidates: np.ndarray, demand: Demand
    ) -> np.ndarray:
        """One candidate drawn at random scores one, the others zero."""
        drawn = np.zeros(len(candidates))
        drawn[self._rng.integers(len(candidates))] = 1.0
        return drawn

    def choose_gpus(self, *, cluster: ClusterState, node: int, demand: Demand) -> tuple[int, ...]:
        if not demand.is_shared:
            return cluster.best_fit_gpus(demand=demand, node=node)
        fitting = np.flatnonzero(cluster.gpu_free[node] >= demand.gpu_milli)
        return (int(fitting[self._rng.integers(len(fitting))]),)


class DotProductPolicy(PlacementPolicy):
    """Tetris: the smallest dot product of free and requested (CPU, GPU) wins."""

    name = "dotprod"

    def scores(
        self, *, cluster: ClusterState, candidates: np.ndarray, demand: Demand
    ) -> np.ndarray:
        cpu = cluster.cpu_free[candidates] / MAX_SPEC_CPU_MILLI
        gpu = _idle_gpu_milli(cluster, candidates) / MAX_SPEC_GPU_MILLI
        product = cpu * (demand.cpu_milli / MAX_SPEC_CPU_MILLI) + gpu * (
            demand.total_gpu_milli / MAX_SPEC_GPU_MILLI
        )
        return np.trunc(MAX_SCORE * (1 - product / 2))


class BestFitPolicy(PlacementPolicy):
    """The node left with the least free CPU and GPU (equal weights) wins."""

    name = "bestfit"

    def scores(
        self, *, cluster: ClusterState, candidates: np.ndarray, demand: Demand
    ) -> np.ndarray:
        cpu_left = (cluster.cpu_free[candidates] - demand.cpu_milli) / MAX_SPEC_CPU_MILLI * 0.5
        gpu_left = (
            (_idle_gpu_milli(cluster, candidates) - demand.total_gpu_milli)
            / MAX_SPEC_GPU_MILLI
            * 0.5
        )
        return np.trunc((1.0 - (cpu_left + gpu_left)) * MAX_SCORE)


class PackingPolicy(PlacementPolicy):
    """Fill partly used GPUs first, then idle GPUs of used nodes, then idle nodes."""

    name = "packing"

    def scores(
        self, *, cluster: ClusterState, candidates: np.ndarray, demand: Demand
    ) -> np.ndarray:
        if not demand.gpus:
            return np.zeros(len(candidates))
        frees = cluster.gpu_free[candidates]
        idle = (frees == MILLI_PER_GPU).sum(axis=1)
        untouched = idle == cluster.gpu_count[candidates]
        if demand.is_shared:
            fitting = np.where(frees >= demand.gpu_milli, frees, MILLI_PER_GPU + 1)
            tightest = fitting.min(axis=1)
            on_idle_gpu = np.full(len(candidates), max(MAX_SCORE // 2 - 1, MAX_SCORE // 3))
            on_used_gpu = np.maximum(MAX_SCORE - (tightest * 100 // MILLI_PER_GPU) // 10, 50)
            used_node = np.where(tightest == MILLI_PER_GPU, on_idle_gpu, on_used_gpu)
        else:
            used_node = np.full(len(candidates), max(MAX_SCORE // 2 - demand.gpus, MAX_SCORE // 3))
        return np.where(untouched, np.maximum(MAX_SCORE // 3 - idle, idle), used_node)


class ClusteringPolicy(PlacementPolicy):
    """Put replicas of the same GPU shape together (shared, 1-GPU, 2-GPU, ...)."""

    name = "clustering"

    def scores(
        self, *, cluster: ClusterState, candidates: np.ndarray, demand: Demand
    ) -> np.ndarray:
        if not demand.gpus:
            return np.zeros(len(candidates))
        shapes = cluster.shape_counts[candidates]
        present = (shapes > 0).sum(axis=1)
        same = shapes[:, cluster.shape_of(demand)] > 0
        fill = (MAX_SCORE // 4) * (MAX_SPEC_GPU_MILLI - _idle_gpu_milli(cluster, candidates))
        fill = fill // MAX_SPEC_GPU_MILLI
        band = np.where(same, np.where(present == 1, 3, 2), np.where(present == 0, 1, 0))
        return fill + band * (MAX_SCORE // 4)


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
        """(node in use, a fraction below one ordering nodes of equal use) per candidate."""
        idle = _idle_gpu_milli(cluster, candidates)
        in_use = idle < cluster.gpu_count[candidates] * MILLI_PER_GPU
        if not demand.gpus:
            within_use = 1.0 - idle / (cluster.gpu_free.shape[1] * MILLI_PER_GPU + 1)
        elif demand.is_shared:
            within_use = _fewer_gpus_first(cluster, candidates)
        else:
            within_use = np.zeros(len(candidates))
        return in_use, within_use


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

    def scores(
        self, *, cluster: ClusterState, candidates: np.ndarray, demand: Demand
    ) -> np.ndarray:
        fgd = FragmentationGradientPolicy.scores(
            self, cluster=cluster, candidates=candidates, demand=demand
        )
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


PLACEMENT_POLICIES = (
    "random",
    "dotprod",
    "clustering",
    "packing",
    "bestfit",
    "fgd",
    "fgd_small_first",
    "fgd_used_first",
    "fgd_keep_scarce",
)


def make_policy(
    *,
    name: str,
    seed: int = 0,
    workload: Sequence[tuple[TaskType, float]] = (),
    rare_workload: Sequence[tuple[TaskType, float]] = (),
) -> PlacementPolicy:
    """``workload``: FGD's target mix; ``rare_workload``: the types it leaves out
    (``fragmentation.rare_workload``), which only ``fgd_keep_scarce`` reads."""
    match name:
        case "random":
            return RandomPolicy(seed=seed)
        case "dotprod":
            return DotProductPolicy()
        case "clustering":
            return ClusteringPolicy()
        case "packing":
            return PackingPolicy()
        case "bestfit":
            return BestFitPolicy()
        case "fgd":
            return FragmentationGradientPolicy(workload=workload)
        case "fgd_small_first":
            return SmallNodesFirstFragmentationPolicy(workload=workload)
        case "fgd_used_first":
            return UsedNodesFirstFragmentationPolicy(workload=workload)
        case "fgd_keep_scarce":
            return ScarceNodesKeptFragmentationPolicy(
                workload=workload, rare_workload=rare_workload
            )
    raise ValueError(f"unknown placement policy {name!r}; choose from {PLACEMENT_POLICIES}")
