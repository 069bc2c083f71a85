"""Placing a whole gang: every replica at once or none, in as tight a topology as it fits.

Preference order: all replicas on one node, then within one domain of each topology level
from the narrowest (e.g. rack) to the widest (e.g. block), then anywhere in one cluster: a gang
never spans clusters (a domain of a level is one cluster's: racks of two clusters with the same
name are two racks). A required level stops the search at that level. Within a level, the
domain with the least room that still fits the gang wins (best fit), so big domains stay free
for big gangs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .free_capacity import ClusterState, Demand
from .model import NodeState, ReplicaPlacement, Request
from .placement import place_replica
from .policies import PlacementPolicy

HOSTNAME = "hostname"
# The widest level of all, always required: the cluster.
CLUSTER_LEVEL = "gpu-cloud.io/cluster"


@dataclass(frozen=True)
class GangShape:
    demand: Demand
    replicas: int
    min_replicas: int
    anti_affinity: bool = False
    required_level: str | None = None

    @classmethod
    def of(cls, request: Request, demand: Demand, replicas: int) -> GangShape:
        """``replicas`` replicas of ``request``, each taking ``demand``."""
        return cls(
            demand=demand,
            replicas=replicas,
            min_replicas=min(request.smallest_gang, replicas),
            anti_affinity=request.anti_affinity,
            required_level=request.required_topology,
        )


def _domain(node: NodeState, level: str) -> tuple[str, str] | None:
    if level == CLUSTER_LEVEL:
        return (node.cluster, "")
    name = node.topology.get(level)
    return None if name is None else (node.cluster, name)


def topology_domains(*, cluster: ClusterState, levels: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Per level, and last per cluster, a domain number per node (-1: the node has no such
    label); numbers follow the (cluster, domain name) order, so the lowest number is the
    smallest name."""
    domains = {}
    for level in (*levels, CLUSTER_LEVEL):
        values = [_domain(node, level) for node in cluster.nodes]
        names = sorted({v for v in values if v is not None})
        number = {name: i for i, name in enumerate(names)}
        domains[level] = np.array(
            [number[v] if v is not None else -1 for v in values], dtype=np.int64
        )
    return domains


def gang_capacity(
    *,
    cluster: ClusterState,
    shape: GangShape,
    among: np.ndarray,
    capacity: np.ndarray | None = None,
) -> np.ndarray:
    """Replicas of the gang each node of ``among`` could take at once (one at most under
    anti-affinity); ``capacity``: the plain replica capacity, if the caller already knows."""
    if capacity is None:
        capacity = cluster.replica_capacity(demand=shape.demand, among=among)
    return np.minimum(capacity, 1) if shape.anti_affinity else capacity


def place_gang(
    *,
    cluster: ClusterState,
    shape: GangShape,
    among: np.ndarray,
    policy: PlacementPolicy,
    domains: Mapping[str, np.ndarray],
    preference: np.ndarray | None = None,
    capacity: np.ndarray | None = None,
) -> tuple[ReplicaPlacement, ...] | None:
    """Place the gang (or, for an elastic one, as many replicas as fit, at least the minimum);
    on failure leave the cluster as it was and return None.

    ``capacity``: replicas of the demand each node of ``among`` takes now, if the caller
    already knows (it is recomputed otherwise).
    """
    capacity = gang_capacity(cluster=cluster, shape=shape, among=among, capacity=capacity)
    fitting = int(capacity.sum())
    if fitting < shape.min_replicas:
        return None
    for count in dict.fromkeys((shape.replicas, min(shape.replicas, fitting))):
        if count < shape.min_replicas or count > fitting:
            continue
        chosen = _choose_domain(
            cluster=cluster,
            shape=shape,
            count=count,
            among=among,
            capacity=capacity,
            policy=policy,
            domains=domains,
        )
        if chosen is not None:
            return _place_in(
                cluster=cluster,
                shape=shape,
                count=count,
                among=chosen,
                policy=policy,
                preference=preference,
            )
    return None


def _choose_domain(
    *,
    cluster: ClusterState,
    shape: GangShape,
    count: int,
    among: np.ndarray,
    capacity: np.ndarray,
    policy: PlacementPolicy,
    domains: Mapping[str, np.ndarray],
) -> np.ndarray | None:
    """The nodes the gang should use, or None if no allowed domain has room for it."""
    if count == 1 or shape.required_level == HOSTNAME or not shape.anti_affinity:
        single = among[capacity >= count]
        if count == 1:
            return single if len(single) else None
        if len(single):
            node = policy.choose_node(cluster=cluster, candidates=single, demand=shape.demand)
            return np.array([node])
        if shape.required_level == HOSTNAME:
            return None
    for level, numbers in domains.items():
        ids = numbers[among]
        labelled = ids >= 0
        room = np.bincount(ids[labelled], weights=capacity[labelled], minlength=1)
        big_enough = np.flatnonzero(room >= count)
        if len(big_enough):
            best = big_enough[np.argmin(room[big_enough])]
            return among[ids == best]
        if level in (shape.required_level, CLUSTER_LEVEL):
            return None
    return None


def _place_in(
    *,
    cluster: ClusterState,
    shape: GangShape,
    count: int,
    among: np.ndarray,
    policy: PlacementPolicy,
    preference: np.ndarray | None,
) -> tuple[ReplicaPlacement, ...] | None:
    saved = cluster.checkpoint()
    placements: list[ReplicaPlacement] = []
    open_nodes = among
    for _ in range(count):
        placed = place_replica(
            cluster=cluster,
            demand=shape.demand,
            among=open_nodes,
            policy=policy,
            preference=preference,
        )
        if placed is None:
            cluster.restore(saved)
            return None
        placements.append(placed)
        if shape.anti_affinity:
            open_nodes = open_nodes[open_nodes != cluster.index[placed.node]]
    return tuple(placements)
