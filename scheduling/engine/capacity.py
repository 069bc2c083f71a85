"""Capacity views for the console and /metrics (free GPUs, what fits, fragmentation), and
the admission cycle's memo of what the cluster can take between two changes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .explain import FreeGpus, free_gpus
from .fragmentation import FragmentationModel, cluster_fragmentation
from .free_capacity import ClusterState, Demand
from .gang import GangShape, gang_capacity
from .model import MILLI_PER_GPU, NodeState, TaskType

REQUEST_SIZES = (1, 2, 4, 8)


@dataclass(frozen=True)
class PoolCapacity:
    pool: str
    gpu_class: str
    gpus_total: int
    gpus_idle: int
    gpu_milli_free: int
    # Idle GPUs of its uncordoned nodes: what requests could use, unlike a cordoned node's.
    gpus_idle_schedulable: int
    schedulable: dict[int, int]  # GPUs per request -> how many such requests fit right now
    cluster: str = ""  # the cluster the pool is in


def pool_capacity(
    *, nodes: Sequence[NodeState], sizes: Sequence[int] = REQUEST_SIZES
) -> list[PoolCapacity]:
    """Per (pool, GPU class): totals and how many 1-, 2-, 4-, 8-GPU requests fit now
    (each size counted on its own, not together; cordoned nodes count as not schedulable)."""
    cluster = ClusterState(nodes)
    pools = np.array([n.pool for n in cluster.nodes])
    classes = np.array([n.gpu_class for n in cluster.nodes])
    open_nodes = np.array([not n.cordoned for n in cluster.nodes], dtype=bool)
    clusters = {n.pool: n.cluster for n in cluster.nodes}
    views = []
    for pool, gpu_class in sorted({(n.pool, n.gpu_class) for n in cluster.nodes}):
        members = np.flatnonzero((pools == pool) & (classes == gpu_class))
        schedulable_nodes = members[open_nodes[members]]
        views.append(
            PoolCapacity(
                pool=pool,
                gpu_class=gpu_class,
                gpus_total=int(cluster.gpu_count[members].sum()),
                gpus_idle=int((cluster.gpu_free[members] >= MILLI_PER_GPU).sum()),
                gpu_milli_free=cluster.idle_gpu_milli(members),
                gpus_idle_schedulable=int(
                    (cluster.gpu_free[schedulable_nodes] >= MILLI_PER_GPU).sum()
                ),
                schedulable={
                    size: int(
                        cluster.replica_capacity(
                            demand=Demand(gpus=size, gpu_milli=MILLI_PER_GPU),
                            among=schedulable_nodes,
                        ).sum()
                    )
                    for size in sizes
                },
                cluster=clusters[pool],
            )
        )
    return views


@dataclass(frozen=True)
class FragmentationView:
    fragmented_gpu_milli: float
    idle_gpu_milli: int

    @property
    def rate(self) -> float:
        """Share of idle GPU capacity that the expected workload cannot use (0 to 1)."""
        return self.fragmented_gpu_milli / self.idle_gpu_milli if self.idle_gpu_milli else 0.0


def fragmentation(
    *, nodes: Sequence[NodeState], workload: Sequence[tuple[TaskType, float]]
) -> FragmentationView:
    """The cluster's fragmentation as the FGD paper defines it, against ``workload``."""
    cluster = ClusterState(nodes)
    model = FragmentationModel(workload=workload, class_names=cluster.class_names)
    frag, idle = cluster_fragmentation(cluster=cluster, model=model)
    return FragmentationView(fragmented_gpu_milli=frag, idle_gpu_milli=idle)


class SettledCapacity:
    """What the cluster can take as it stands, for a cycle that asks the same questions of
    thousands of queued workloads with a few dozen shapes: replicas per node by demand, the
    room of a node set for a gang, and free or idle GPUs of a node set.

    Valid until ``changed()``, which the cycle calls whenever it changes the cluster for good
    (an admission, an eviction); trials that restore the cluster must not ask meanwhile.
    Node sets are cached by id only once ``keep`` registered them: the caller holds them
    to the end, so no other array can take that id.
    """

    def __init__(self, cluster: ClusterState) -> None:
        self._cluster = cluster
        self._all_nodes = np.arange(len(cluster))
        pools = np.array([n.pool for n in cluster.nodes])
        self._pool_names, self._pool_ids = np.unique(pools, return_inverse=True)
        self._kept: set[int] = set()
        self._capacity: dict[Demand, np.ndarray] = {}
        self._room: dict[tuple[Demand, bool, int], int] = {}
        self._free: dict[tuple[int, bool], FreeGpus] = {}
        self._idle: dict[int, dict[str, int]] = {}

    def keep(self, nodes: np.ndarray) -> np.ndarray:
        self._kept.add(id(nodes))
        return nodes

    def kept(self, nodes: np.ndarray) -> bool:
        return id(nodes) in self._kept

    def changed(self) -> None:
        self._capacity.clear()
        self._room.clear()
        self._free.clear()
        self._idle.clear()

    def replica_capacity(self, *, demand: Demand, among: np.ndarray) -> np.ndarray:
        """As ``ClusterState.replica_capacity``, computed once per demand for all nodes."""
        capacity = self._capacity.get(demand)
        if capacity is None:
            capacity = self._cluster.replica_capacity(demand=demand, among=self._all_nodes)
            self._capacity[demand] = capacity
        return capacity[among]

    def gang_room(self, *, shape: GangShape, among: np.ndarray) -> int:
        """How many of the gang's replicas ``among`` takes at once."""
        key = (shape.demand, shape.anti_affinity, id(among))
        room = self._room.get(key) if self.kept(among) else None
        if room is None:
            capacity = self.replica_capacity(demand=shape.demand, among=among)
            room = int(
                gang_capacity(
                    cluster=self._cluster, shape=shape, among=among, capacity=capacity
                ).sum()
            )
            if self.kept(among):
                self._room[key] = room
        return room

    def free_gpus(self, *, among: np.ndarray, shared: bool) -> FreeGpus:
        key = (id(among), shared)
        free = self._free.get(key) if self.kept(among) else None
        if free is None:
            free = free_gpus(cluster=self._cluster, among=among, shared=shared)
            if self.kept(among):
                self._free[key] = free
        return free

    def idle_by_pool(self, *, among: np.ndarray) -> dict[str, int]:
        """Idle whole GPUs of the nodes ``among`` per pool."""
        idle = self._idle.get(id(among)) if self.kept(among) else None
        if idle is None:
            per_node = (self._cluster.gpu_free[among] >= MILLI_PER_GPU).sum(axis=1)
            counts = np.bincount(
                self._pool_ids[among], weights=per_node, minlength=len(self._pool_names)
            )
            idle = {
                str(pool): int(count) for pool, count in zip(self._pool_names, counts, strict=True)
            }
            if self.kept(among):
                self._idle[id(among)] = idle
        return idle
