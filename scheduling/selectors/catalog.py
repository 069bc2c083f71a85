"""Reads of what the cluster offers every tenant alike: GPU classes, priority tiers, GPU pools
and the capacity of each."""

from collections import defaultdict
from datetime import datetime

from django.db.models import Q, QuerySet

from ..models import GpuClass, Node, NodeAvailability, NodePool, PriorityTier


def gpu_class_list() -> QuerySet[GpuClass]:
    return GpuClass.objects.order_by("name")


def tier_list() -> QuerySet[PriorityTier]:
    return PriorityTier.objects.order_by("-value")


def pool_list() -> QuerySet[NodePool]:
    """The GPU pools (what can be reserved and ordered), CPU pools left out."""
    return (
        NodePool.objects.filter(gpu_class__isnull=False)
        .select_related("gpu_class")
        .order_by("name")
    )


def pool_capacity(pool: NodePool, mig_profile: str = "") -> int:
    """Whole GPUs (or instances of ``mig_profile``) of the pool's schedulable (not cordoned)
    nodes."""
    return _capacity(pool_nodes(pool=pool)[pool.pk], mig_profile)


def pool_nodes(*, pool: NodePool | None = None) -> defaultdict[int, list[tuple[int, dict]]]:
    """The schedulable (not cordoned) nodes of every pool (or of ``pool``) as (GPU count, MIG
    layout), by pool id: one query however many pools."""
    nodes = Node.objects.filter(cordoned=False)
    if pool is not None:
        nodes = nodes.filter(pool=pool)
    by_pool = defaultdict(list)
    for pool_id, gpus, layout in nodes.values_list("pool_id", "gpu_count", "mig_layout"):
        by_pool[pool_id].append((gpus, layout))
    return by_pool


def _capacity(nodes: list[tuple[int, dict]], mig_profile: str = "") -> int:
    """Whole GPUs (or instances of ``mig_profile``) of nodes given as (GPU count, MIG layout)."""
    if mig_profile:
        return sum(layout.get(mig_profile, 0) for _, layout in nodes)
    return sum(gpus for gpus, _ in nodes)


def pool_resources(pool: NodePool, nodes: list[tuple[int, dict]]) -> list[tuple[str, int]]:
    """What can be reserved in the pool: its whole GPUs ("") and each MIG profile of its class
    that its nodes offer, with the capacity of each; ``nodes``: its ``pool_nodes``."""
    resources = [("", _capacity(nodes))]
    for profile in pool.gpu_class.mig_profiles:
        if capacity := _capacity(nodes, profile):
            resources.append((profile, capacity))
    return resources


def class_capacities(*, gpu_class: GpuClass, mig_profile: str = "") -> dict[str, int]:
    """``pool_capacity`` of each pool of the class, by pool name."""
    pools = NodePool.objects.filter(gpu_class=gpu_class).order_by("name")
    return {pool.name: pool_capacity(pool, mig_profile) for pool in pools}


def pool_capacity_named(name: str) -> int:
    """``pool_capacity`` of the pool called ``name`` (0 for none)."""
    pool = NodePool.objects.filter(name=name).first()
    return pool_capacity(pool) if pool else 0


def pool_of_class_exists(*, name: str, gpu_class: GpuClass) -> bool:
    return NodePool.objects.filter(name=name, gpu_class=gpu_class).exists()


def node_availability(
    *, starts_at: datetime, ends_at: datetime, pool: NodePool | None = None
) -> QuerySet[NodeAvailability]:
    """The nodes' availability spans that overlap [starts_at, ends_at) (of ``pool``; None:
    every pool), by node and start."""
    spans = NodeAvailability.objects.filter(
        Q(ends_at__isnull=True) | Q(ends_at__gt=starts_at), starts_at__lt=ends_at
    )
    if pool is not None:
        spans = spans.filter(pool=pool)
    return spans.order_by("node_id", "starts_at")
