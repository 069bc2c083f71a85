"""Finishing what a lost task left half-done.

A task killed with its worker is redelivered by Redis only after the visibility timeout; until
then a workload admitted but never launched would hold its GPUs, and the objects of an ended one
would stay in the cluster. Every intermediate state is therefore recorded in the database
(admitted but not launched, due for teardown, deleted but not deprovisioned, created but not
provisioned), and this pass, run by beat, does the work again for what stayed there past a grace
period. Every step it repeats is idempotent, so a late redelivery of the lost task changes
nothing.
"""

import logging
from dataclasses import dataclass
from datetime import timedelta
from functools import partial

from django.conf import settings
from django.db.models import Exists, F, OuterRef, Q, QuerySet

from portal import clock
from tenants.models import Project

from ..cluster import ClusterBackend, ClusterError
from ..models import Cluster, ProvisioningRecord, Workload
from ..selectors.provisioning import cluster_organizations
from .clusters import workloads_in
from .lifecycle import workload_launch, workload_objects_delete
from .provisioning import project_deprovision, project_provision

logger = logging.getLogger(__name__)

# Provisioning tasks retry on their own with backoff up to five minutes apart: a record that
# has not moved for longer than that lost its task.
PROVISIONING_STALE_AFTER = timedelta(minutes=10)
# How many graces a launch that never started is waited for while messages wait in its queue
# (a burst of ten thousand launches drains within that at the default grace of a minute).
QUEUED_LAUNCH_PATIENCE = 10


@dataclass(frozen=True)
class Reconciled:
    """The ids this pass finished the work of, per kind of work."""

    launched: tuple[str, ...] = ()
    torn_down: tuple[str, ...] = ()
    provisioned: tuple[str, ...] = ()
    deprovisioned: tuple[str, ...] = ()


def _each(step, ids, *, id_name: str, backend: ClusterBackend) -> tuple[str, ...]:
    """Run `step` for each id; one the cluster refuses for now is left for the next pass."""
    done = []
    for object_id in ids:
        try:
            step(backend=backend, **{id_name: object_id})
        except ClusterError as error:
            logger.warning(
                "Reconciling %s %s: %s (the next pass retries)", id_name, object_id, error
            )
            continue
        done.append(str(object_id))
    return tuple(done)


def cluster_reconcile(
    *,
    backend: ClusterBackend,
    cluster: Cluster | None = None,
    grace: timedelta | None = None,
    launches_queued: bool = False,
) -> Reconciled:
    """Launch the workloads admitted but not launched, delete the objects of those due for
    teardown (those placed in the cluster; None: in every cluster), provision and deprovision
    in the cluster the projects whose task was lost there, and provision there the projects it
    has not held yet (a cluster added later).

    A launch that started and did not finish within the grace was lost with its worker. One
    that never started may only be waiting behind a burst: it counts as lost once the grace
    has passed since its admission and no launch waits in the queue (`launches_queued`), or
    once it waited QUEUED_LAUNCH_PATIENCE graces all the same: a cluster's queue also holds
    its other tasks, and one that never empties must not hold a lost launch back for ever."""
    grace = grace if grace is not None else timedelta(seconds=settings.PORTAL_RECONCILE_SECONDS)
    before = clock.now() - grace
    waited_before = clock.now() - grace * (QUEUED_LAUNCH_PATIENCE if launches_queued else 1)
    lost_launch = Q(launch_started_at__lt=before) | Q(
        launch_started_at__isnull=True, admitted_at__lt=waited_before
    )
    unlaunched = workloads_in(
        Workload.objects.filter(
            lost_launch, state=Workload.State.ADMITTED, launched_at__isnull=True
        ),
        cluster,
        active=True,
    ).values_list("pk", flat=True)
    undeleted = workloads_in(
        Workload.objects.filter(teardown_due_at__lt=before), cluster, active=False
    ).values_list("pk", flat=True)
    wall = clock.wall()
    stale = wall - max(grace, PROVISIONING_STALE_AFTER)
    return Reconciled(
        launched=_each(workload_launch, unlaunched, id_name="workload_id", backend=backend),
        torn_down=_each(workload_objects_delete, undeleted, id_name="workload_id", backend=backend),
        provisioned=_each(
            partial(project_provision, cluster=cluster),
            _unprovisioned(cluster, created_before=wall - grace, stale=stale),
            id_name="project_id",
            backend=backend,
        ),
        deprovisioned=_each(
            partial(project_deprovision, cluster=cluster),
            _undeprovisioned(cluster, deleted_before=wall - grace, stale=stale),
            id_name="project_id",
            backend=backend,
        ),
    )


def _records_here(cluster: Cluster | None) -> QuerySet[ProvisioningRecord]:
    """The projects' provisioning records of the cluster (None: of the settings' backend)."""
    return ProvisioningRecord.objects.filter(project=OuterRef("pk"), cluster=cluster)


def _unprovisioned(cluster: Cluster | None, *, created_before, stale) -> QuerySet:
    """The projects the cluster should hold and has no record of (a cluster added since gets
    every project of the organizations that may use it), or a pending record untouched for
    longer than the task's retries last."""
    projects = Project.objects.filter(deleted_at__isnull=True, created_at__lt=created_before)
    organizations = cluster_organizations(cluster=cluster)
    if organizations is not None:
        projects = projects.filter(organization_id__in=organizations)
    lost = _records_here(cluster).filter(
        state=ProvisioningRecord.State.PENDING, updated_at__lt=stale
    )
    return projects.filter(~Exists(_records_here(cluster)) | Exists(lost)).values_list(
        "pk", flat=True
    )


def _undeprovisioned(cluster: Cluster | None, *, deleted_before, stale) -> QuerySet:
    """The deleted projects whose record in the cluster is missing, or untouched since the
    deletion (or for longer than the task's retries last) and neither removed nor failed."""
    untouched = _records_here(cluster).filter(
        Q(updated_at__lt=F("project__deleted_at")) | Q(updated_at__lt=stale)
    )
    settled = _records_here(cluster).filter(
        state__in=[ProvisioningRecord.State.REMOVED, ProvisioningRecord.State.FAILED]
    )
    return (
        Project.objects.filter(deleted_at__lt=deleted_before)
        .filter(~Exists(_records_here(cluster)) | Exists(untouched))
        .exclude(Exists(settled))
        .values_list("pk", flat=True)
    )
