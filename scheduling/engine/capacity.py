"""Capacity views for the console and /metrics: free GPUs, what fits, fragmentation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .cluster import ClusterState, Demand
from .fragmentation import FragmentationModel, cluster_fragmentation
from .model import MILLI_PER_GPU, NodeState, TaskType

REQUEST_SIZES = (1, 2, 4, 8)


@dataclass(frozen=True)
class PoolCapacity:
    pool: str
    gpu_class: str
    gpus_total: int
    gpus_idle: int
    gpu_milli_free: int
    schedulable: dict[int, int]  # GPUs per request -> how many such requests fit right now


def pool_capacity(
    *, nodes: Sequence[NodeState], sizes: Sequence[int] = REQUEST_SIZES
) -> list[PoolCapacity]:
    """Per (pool, GPU class): totals and how many 1-, 2-, 4-, 8-GPU requests fit now
    (each size counted on its own, not together; cordoned nodes count as not schedulable)."""
    cluster = ClusterState(nodes)
    pools = np.array([n.pool for n in cluster.nodes])
    classes = np.array([n.gpu_class for n in cluster.nodes])
    open_nodes = np.array([not n.cordoned for n in cluster.nodes], dtype=bool)
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
                schedulable={
                    size: int(
                        cluster.replica_capacity(
                            demand=Demand(gpus=size, gpu_milli=MILLI_PER_GPU),
                            among=schedulable_nodes,
                        ).sum()
                    )
                    for size in sizes
                },
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
