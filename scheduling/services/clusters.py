"""Which work runs in which cluster: each cluster's passes (inventory, status, reconciler)
handle the workloads placed there, with that cluster's backend; and whether each cluster
answers."""

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet

from portal import clock

from ..cluster import ClusterError
from ..models import Cluster, Placement, Workload

logger = logging.getLogger(__name__)


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


def cluster_answered(*, cluster: Cluster) -> Cluster:
    """The cluster answered (its inventory was read): seen now. One that was unreachable is
    ready again, and the work it kept running while it was away is followed again from now:
    its placements, closed at the last time it was seen, reopen (nothing is launched again:
    the status sync then finds each workload's objects as the cluster kept them)."""
    now = clock.now()
    with transaction.atomic():
        cluster = Cluster.objects.select_for_update().get(pk=cluster.pk)
        if cluster.state == Cluster.State.UNREACHABLE:
            _placements_reopen(cluster, now=now)
        cluster.state, cluster.last_seen_at = Cluster.State.READY, now
        cluster.save(update_fields=["state", "last_seen_at"])
    return cluster


def cluster_unanswered(*, cluster: Cluster, error: ClusterError) -> Cluster:
    """The cluster did not answer. Past the grace (PORTAL_CLUSTER_UNREACHABLE_SECONDS since
    it was last seen) it is unreachable: its pools take no new work (the cycle reads its nodes
    as cordoned), and its running workloads stop being metered at the last time it was seen
    (their placements end then) and say so."""
    grace = timedelta(seconds=settings.PORTAL_CLUSTER_UNREACHABLE_SECONDS)
    now = clock.now()
    with transaction.atomic():
        cluster = Cluster.objects.select_for_update().get(pk=cluster.pk)
        seen = cluster.last_seen_at
        if cluster.state == Cluster.State.UNREACHABLE or (seen and now - seen < grace):
            return cluster
        logger.warning("Cluster %s unreachable since %s: %s", cluster.name, seen, error)
        cut = seen or now
        cluster.state, cluster.last_seen_at = Cluster.State.UNREACHABLE, cut
        cluster.save(update_fields=["state", "last_seen_at"])
        running = workloads_in(
            Workload.objects.filter(state__in=Workload.ACTIVE_STATES), cluster, active=True
        )
        running.update(status_reason=f"Cluster unreachable (last seen {cut:%Y-%m-%d %H:%M} UTC).")
        Placement.objects.filter(
            workload__in=list(running), node__pool__cluster=cluster, ended_at__isnull=True
        ).update(ended_at=cut)
    return cluster


def _placements_reopen(cluster: Cluster, *, now) -> None:
    """New placements, from now, for the active workloads of the cluster whose placements
    were closed when it became unreachable (at its last seen time)."""
    closed = Placement.objects.filter(
        node__pool__cluster=cluster,
        ended_at=cluster.last_seen_at,
        workload__state__in=Workload.ACTIVE_STATES,
    ).select_related("workload")
    reopened = [
        Placement(
            workload_id=placement.workload_id,
            replica=placement.replica,
            node_id=placement.node_id,
            gpu_indices=placement.gpu_indices,
            gpu_milli=placement.gpu_milli,
            mig_profile=placement.mig_profile,
            mig_count=placement.mig_count,
            cpu_milli=placement.cpu_milli,
            memory_mib=placement.memory_mib,
            started_at=now,
            running_at=now if placement.running_at else None,
        )
        for placement in closed
    ]
    Placement.objects.bulk_create(reopened)
    Workload.objects.filter(pk__in={p.workload_id for p in reopened}).update(status_reason="")
