"""Free capacity of every node as numpy arrays, so that fit checks and scores run per pool
in a handful of vector operations instead of a Python loop per node."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .model import MILLI_PER_GPU, NodeState, ReplicaPlacement, Request

NO_GPU = -1  # padding for GPU slots a node does not have; never fits any request
SHAPES = 10  # replica GPU shapes counted per node: 0 = a shared GPU, k = k whole GPUs, 9 = more


@dataclass(frozen=True)
class Demand:
    """What one replica takes from one node."""

    cpu_milli: int = 0
    memory_mib: int = 0
    gpus: int = 0
    gpu_milli: int = 0
    mig_profile: str | None = None
    mig_count: int = 0

    @classmethod
    def of(cls, request: Request) -> Demand:
        if request.gpus:
            gpus, milli = request.gpus, MILLI_PER_GPU
        elif request.gpu_milli:
            gpus, milli = 1, request.gpu_milli
        else:
            gpus, milli = 0, 0
        return cls(
            cpu_milli=request.cpu_milli,
            memory_mib=request.memory_mib,
            gpus=gpus,
            gpu_milli=milli,
            mig_profile=request.mig_profile if request.mig_count else None,
            mig_count=request.mig_count if request.mig_profile else 0,
        )

    @property
    def is_shared(self) -> bool:
        return self.gpus == 1 and 0 < self.gpu_milli < MILLI_PER_GPU

    @property
    def total_gpu_milli(self) -> int:
        return self.gpus * self.gpu_milli


class ClusterState:
    """Mutable free capacity; node order is by name, so index order breaks ties by name."""

    def __init__(self, nodes: Sequence[NodeState]) -> None:
        self.nodes = sorted(nodes, key=lambda n: n.name)
        self.index = {node.name: i for i, node in enumerate(self.nodes)}
        count = len(self.nodes)
        width = max((len(n.gpu_free_milli) for n in self.nodes), default=0)
        self.gpu_free = np.full((count, max(width, 1)), NO_GPU, dtype=np.int64)
        for i, node in enumerate(self.nodes):
            self.gpu_free[i, : len(node.gpu_free_milli)] = node.gpu_free_milli
        self.gpu_count = np.array([len(n.gpu_free_milli) for n in self.nodes], dtype=np.int64)
        self.cpu_free = np.array([n.cpu_free_milli for n in self.nodes], dtype=np.int64)
        self.memory_free = np.array([n.memory_free_mib for n in self.nodes], dtype=np.int64)
        self.class_names = sorted({n.gpu_class for n in self.nodes})
        class_ids = {name: i for i, name in enumerate(self.class_names)}
        self.class_id = np.array([class_ids[n.gpu_class] for n in self.nodes], dtype=np.int64)
        profiles = sorted({p for n in self.nodes for p in n.mig_free})
        self.mig_free = {
            p: np.array([n.mig_free.get(p, 0) for n in self.nodes], dtype=np.int64)
            for p in profiles
        }
        self.shape_counts = np.zeros((count, SHAPES), dtype=np.int64)
        # Nodes with equal class, free CPU and free GPU multiset share a state id, so
        # policies can memoise per state instead of per node.
        self.state_keys: list[tuple[int, int, tuple[int, ...]]] = []
        self._state_ids: dict[tuple[int, int, tuple[int, ...]], int] = {}
        self.state_id = np.zeros(count, dtype=np.int64)
        for i in range(count):
            self._refresh_state(i)

    def __len__(self) -> int:
        return len(self.nodes)

    def _refresh_state(self, node: int) -> None:
        frees = self.gpu_free[node, : self.gpu_count[node]]
        key = (int(self.class_id[node]), int(self.cpu_free[node]), tuple(sorted(frees.tolist())))
        state = self._state_ids.get(key)
        if state is None:
            state = self._state_ids[key] = len(self.state_keys)
            self.state_keys.append(key)
        self.state_id[node] = state

    @staticmethod
    def shape_of(demand: Demand) -> int:
        return 0 if demand.is_shared else min(demand.gpus, SHAPES - 1)

    def note_replica(self, *, node: int, demand: Demand, count: int = 1) -> None:
        """Count a GPU replica's shape on a node (the clustering policy groups by shape)."""
        if demand.gpus:
            self.shape_counts[node, self.shape_of(demand)] += count

    def fits(self, *, demand: Demand, among: np.ndarray) -> np.ndarray:
        """Indices of the nodes in ``among`` (indices) where one replica fits now."""
        ok = (self.cpu_free[among] >= demand.cpu_milli) & (
            self.memory_free[among] >= demand.memory_mib
        )
        if demand.gpus:
            usable = (self.gpu_free[among] >= demand.gpu_milli).sum(axis=1)
            ok &= usable >= demand.gpus
        if demand.mig_count:
            free = self.mig_free.get(demand.mig_profile or "")
            if free is None:
                return among[:0]
            ok &= free[among] >= demand.mig_count
        return among[ok]

    def replica_capacity(self, *, demand: Demand, among: np.ndarray) -> np.ndarray:
        """How many replicas of ``demand`` each node of ``among`` could take at once."""
        capacity = np.full(len(among), np.iinfo(np.int64).max, dtype=np.int64)
        if demand.cpu_milli:
            capacity = np.minimum(capacity, self.cpu_free[among] // demand.cpu_milli)
        if demand.memory_mib:
            capacity = np.minimum(capacity, self.memory_free[among] // demand.memory_mib)
        if demand.gpus:
            frees = self.gpu_free[among]
            if demand.is_shared:
                per_node = (np.maximum(frees, 0) // demand.gpu_milli).sum(axis=1)
            else:
                per_node = (frees >= demand.gpu_milli).sum(axis=1) // demand.gpus
            capacity = np.minimum(capacity, per_node)
        if demand.mig_count:
            free = self.mig_free.get(demand.mig_profile or "")
            per_node = np.zeros(len(among), dtype=np.int64) if free is None else free[among]
            capacity = np.minimum(capacity, per_node // demand.mig_count)
        return capacity

    def best_fit_gpus(self, *, demand: Demand, node: int) -> tuple[int, ...]:
        """Whole GPUs: the lowest-numbered idle ones; a share: the fullest GPU it fits on."""
        frees = self.gpu_free[node]
        if not demand.gpus:
            return ()
        if demand.is_shared:
            fitting = np.flatnonzero(frees >= demand.gpu_milli)
            return (int(fitting[np.argmin(frees[fitting])]),)
        idle = np.flatnonzero(frees >= demand.gpu_milli)
        return tuple(int(i) for i in idle[: demand.gpus])

    def allocate(
        self, *, node: int, demand: Demand, gpu_indices: tuple[int, ...]
    ) -> ReplicaPlacement:
        self.cpu_free[node] -= demand.cpu_milli
        self.memory_free[node] -= demand.memory_mib
        for gpu in gpu_indices:
            self.gpu_free[node, gpu] -= demand.gpu_milli
        if demand.mig_count:
            self.mig_free[demand.mig_profile or ""][node] -= demand.mig_count
        self.note_replica(node=node, demand=demand)
        self._refresh_state(node)
        return ReplicaPlacement(
            node=self.nodes[node].name,
            gpu_indices=gpu_indices,
            gpu_milli=demand.gpu_milli,
            mig_profile=demand.mig_profile,
            mig_count=demand.mig_count,
            cpu_milli=demand.cpu_milli,
            memory_mib=demand.memory_mib,
        )

    def release(self, placement: ReplicaPlacement) -> None:
        node = self.index.get(placement.node)
        if node is None:
            return
        self.cpu_free[node] += placement.cpu_milli
        self.memory_free[node] += placement.memory_mib
        for gpu in placement.gpu_indices:
            self.gpu_free[node, gpu] += placement.gpu_milli
        if placement.mig_count and placement.mig_profile in self.mig_free:
            self.mig_free[placement.mig_profile][node] += placement.mig_count
        shape = Demand(gpus=len(placement.gpu_indices), gpu_milli=placement.gpu_milli)
        self.note_replica(node=node, demand=shape, count=-1)
        self._refresh_state(node)

    def checkpoint(self) -> dict[str, np.ndarray]:
        """A copy of everything placements change, for trying a gang and taking it back."""
        saved = {
            "gpu_free": self.gpu_free,
            "cpu_free": self.cpu_free,
            "memory_free": self.memory_free,
            "state_id": self.state_id,
            "shape_counts": self.shape_counts,
        }
        saved.update({f"mig:{p}": free for p, free in self.mig_free.items()})
        return {name: array.copy() for name, array in saved.items()}

    def restore(self, saved: dict[str, np.ndarray]) -> None:
        self.gpu_free = saved["gpu_free"].copy()
        self.cpu_free = saved["cpu_free"].copy()
        self.memory_free = saved["memory_free"].copy()
        self.state_id = saved["state_id"].copy()
        self.shape_counts = saved["shape_counts"].copy()
        self.mig_free = {p: saved[f"mig:{p}"].copy() for p in self.mig_free}

    def idle_gpu_milli(self, among: np.ndarray | None = None) -> int:
        frees = self.gpu_free if among is None else self.gpu_free[among]
        return int(np.maximum(frees, 0).sum())
