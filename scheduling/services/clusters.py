"""Which work runs in which cluster: each cluster's passes (inventory, status, reconciler)
handle the workloads placed there, with that cluster's backend."""

from django.db.models import QuerySet

from ..models import Cluster, Placement


def workloads_in(workloads: QuerySet, cluster: Cluster | None, *, active: bool) -> QuerySet:
    """`workloads` narrowed to those placed in the cluster (None: every cluster): by their
    placements not yet ended (`active`), or by any placement they had (teardown comes after
    the placements end)."""
    if cluster is None:
        return workloads
    placements = Placement.objects.filter(node__pool__cluster=cluster)
    if active:
        placements = placements.filter(ended_at__isnull=True)
    return workloads.filter(pk__in=placements.values("workload_id"))
