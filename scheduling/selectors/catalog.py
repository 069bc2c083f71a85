"""Reads of what the cluster offers every tenant alike: GPU classes, priority tiers, GPU pools
and the capacity of each."""

from django.db.models import QuerySet, Sum

from ..models import GpuClass, Node, NodePool, PriorityTier


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
    nodes = Node.objects.filter(pool=pool, cordoned=False)
    if mig_profile:
        layouts = nodes.values_list("mig_layout", flat=True)
        return sum(layout.get(mig_profile, 0) for layout in layouts)
    return nodes.aggregate(gpus=Sum("gpu_count"))["gpus"] or 0


def pool_resources(pool: NodePool) -> list[tuple[str, int]]:
    """What can be reserved in the pool: its whole GPUs ("") and each MIG profile of its class
    that its nodes offer, with the capacity of each."""
    resources = [("", pool_capacity(pool))]
    for profile in pool.gpu_class.mig_profiles:
        if capacity := pool_capacity(pool, profile):
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
