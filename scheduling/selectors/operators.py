"""Operators' reads across every tenant, for the operator API: pools and nodes, GPU classes and
tiers by name, quota grants, reservations and quota requests. Each requires an operator."""

from django.db.models import Count, Q, QuerySet, Sum

from portal.errors import NotFound
from tenants.permissions import Caller, require_operator

from ..models import GpuClass, Node, NodePool, PriorityTier, QuotaGrant, QuotaRequest, Reservation


def pools_for_operator(*, caller: Caller) -> QuerySet[NodePool]:
    """Every pool, CPU pools too, with its nodes and GPUs counted."""
    require_operator(caller)
    return (
        NodePool.objects.select_related("gpu_class")
        .annotate(
            node_count=Count("nodes"),
            nodes_cordoned=Count("nodes", filter=Q(nodes__cordoned=True)),
            nodes_ready=Count("nodes", filter=Q(nodes__ready=True)),
            gpu_total=Sum("nodes__gpu_count", default=0),
        )
        .order_by("name")
    )


def nodes_for_operator(*, caller: Caller) -> QuerySet[Node]:
    require_operator(caller)
    return Node.objects.select_related("pool__gpu_class").order_by("pool__name", "name")


def node_for_operator(*, caller: Caller, name: str) -> Node:
    node = nodes_for_operator(caller=caller).filter(name=name).first()
    if node is None:
        raise NotFound(f"No node {name!r}.")
    return node


def gpu_class_for_operator(*, caller: Caller, name: str) -> GpuClass:
    require_operator(caller)
    gpu_class = GpuClass.objects.filter(name=name).first()
    if gpu_class is None:
        raise NotFound(f"No GPU class {name!r}.")
    return gpu_class


def tier_for_operator(*, caller: Caller, name: str) -> PriorityTier:
    require_operator(caller)
    tier = PriorityTier.objects.filter(name=name).first()
    if tier is None:
        raise NotFound(f"No priority tier {name!r}.")
    return tier


def quota_grants_for_operator(*, caller: Caller) -> QuerySet[QuotaGrant]:
    """Every organization's quota grants."""
    require_operator(caller)
    return QuotaGrant.objects.select_related("organization", "project", "gpu_class")


def reservations_for_operator(*, caller: Caller) -> QuerySet[Reservation]:
    """Every organization's reservations, the oldest request first."""
    require_operator(caller)
    return Reservation.objects.select_related(
        "organization", "project", "gpu_class", "pool", "requested_by"
    ).order_by("requested_at", "pk")


def quota_requests_for_operator(*, caller: Caller) -> QuerySet[QuotaRequest]:
    """Every organization's quota requests, the oldest first."""
    require_operator(caller)
    return QuotaRequest.objects.select_related(
        "organization", "project", "gpu_class", "requested_by"
    ).order_by("requested_at", "pk")
