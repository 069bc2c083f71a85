"""Placing one replica: filter by fit, let the policy pick a node and GPUs, take them."""

from __future__ import annotations

import numpy as np

from .free_capacity import ClusterState, Demand
from .model import ReplicaPlacement
from .policies import PlacementPolicy


def place_replica(
    *,
    cluster: ClusterState,
    demand: Demand,
    among: np.ndarray,
    policy: PlacementPolicy,
    preference: np.ndarray | None = None,
) -> ReplicaPlacement | None:
    """Allocate one replica on the best node of ``among`` (node indices), or return None.

    ``preference`` (one number per node of the cluster, e.g. preferred affinity) ranks
    before the policy: the policy only chooses among the most preferred nodes that fit.
    """
    candidates = cluster.fits(demand=demand, among=among)
    if not len(candidates):
        return None
    if preference is not None:
        ranks = preference[candidates]
        candidates = candidates[ranks == ranks.max()]
    node = policy.choose_node(cluster=cluster, candidates=candidates, demand=demand)
    gpus = policy.choose_gpus(cluster=cluster, node=node, demand=demand)
    return cluster.allocate(node=node, demand=demand, gpu_indices=gpus)
