"""The FGD paper's baseline policies (its simulator, hkust-adsl/kubernetes-scheduler-simulator).

Every score is an integer from 0 to 100 and the smallest node name wins a tie, because those
coarse scores are what its published numbers come from.
"""

from __future__ import annotations

from typing import Self

import numpy as np

from ..free_capacity import ClusterState, Demand
from ..model import MILLI_PER_GPU
from .base import (
    MAX_SCORE,
    MAX_SPEC_CPU_MILLI,
    MAX_SPEC_GPU_MILLI,
    PlacementPolicy,
    PolicyContext,
    idle_gpu_milli,
)


class RandomPolicy(PlacementPolicy):
    """Any node that fits, uniformly at random from a seeded generator."""

    name = "random"

    def __init__(self, *, seed: int) -> None:
        self._rng = np.random.default_rng(seed)

    @classmethod
    def from_context(cls, context: PolicyContext) -> Self:
        return cls(seed=context.seed)

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
        gpu = idle_gpu_milli(cluster, candidates) / MAX_SPEC_GPU_MILLI
        product = cpu * (demand.cpu_milli / MAX_SPEC_CPU_MILLI) + gpu * (
            demand.total_gpu_milli / MAX_SPEC_GPU_MILLI
        )
        return np.trunc(MAX_SCORE * (1 - product / 2))


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
        fill = (MAX_SCORE // 4) * (MAX_SPEC_GPU_MILLI - idle_gpu_milli(cluster, candidates))
        fill = fill // MAX_SPEC_GPU_MILLI
        band = np.where(same, np.where(present == 1, 3, 2), np.where(present == 0, 1, 0))
        return fill + band * (MAX_SCORE // 4)


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


class BestFitPolicy(PlacementPolicy):
    """The node left with the least free CPU and GPU (equal weights) wins."""

    name = "bestfit"

    def scores(
        self, *, cluster: ClusterState, candidates: np.ndarray, demand: Demand
    ) -> np.ndarray:
        cpu_left = (cluster.cpu_free[candidates] - demand.cpu_milli) / MAX_SPEC_CPU_MILLI * 0.5
        gpu_left = (
            (idle_gpu_milli(cluster, candidates) - demand.total_gpu_milli)
            / MAX_SPEC_GPU_MILLI
            * 0.5
        )
        return np.trunc((1.0 - (cpu_left + gpu_left)) * MAX_SCORE)
