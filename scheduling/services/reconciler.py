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

from django.conf import settings
from django.db.models import F, Q

from portal import clock
from tenants.models import Project

from ..cluster import ClusterBackend, ClusterError
from ..models import Cluster, ProvisioningRecord, Workload
from .clusters import workloads_in
from .lifecycle import workload_launch, workload_objects_delete
from .provisioning import project_deprovision, project_provision

logger = logging.getLogger(__name__)

# Provisioning tasks retry on their own with backoff up to five minutes apart: a record that
# has not moved for longer than that lost its task.
PROVISIONING_STALE_AFTER = timedelta(minutes=10)


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
    the projects whose task was lost.

    A launch that started and did not finish within the grace was lost with its worker. One
    that never started may only be waiting behind a burst: it counts as lost once the grace
    has passed since its admission and no launch waits in the queue (`launches_queued`)."""
    grace = grace if grace is not None else timedelta(seconds=settings.PORTAL_RECONCILE_SECONDS)
    before = clock.now() - grace
    lost_launch = Q(launch_started_at__lt=before)
    if not launches_queued:
        lost_launch |= Q(launch_started_at__isnull=True, admitted_at__lt=before)
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
    unprovisioned = Project.objects.filter(
        Q(provisioning__isnull=True)
        | Q(
            provisioning__state=ProvisioningRecord.State.PENDING, provisioning__updated_at__lt=stale
        ),
        deleted_at__isnull=True,
        created_at__lt=wall - grace,
    ).values_list("pk", flat=True)
    # Deleted, and its record untouched since (or for longer than the task's retries last).
    undeprovisioned = (
        Project.objects.filter(deleted_at__lt=wall - grace)
        .filter(
            Q(provisioning__isnull=True)
            | Q(provisioning__updated_at__lt=F("deleted_at"))
            | Q(provisioning__updated_at__lt=stale)
        )
        .exclude(
            provisioning__state__in=[
                ProvisioningRecord.State.REMOVED,
                ProvisioningRecord.State.FAILED,
            ]
        )
        .values_list("pk", flat=True)
    )
    return Reconciled(
        launched=_each(workload_launch, unlaunched, id_name="workload_id", backend=backend),
        torn_down=_each(workload_objects_delete, undeleted, id_name="workload_id", backend=backend),
        provisioned=_each(project_provision, unprovisioned, id_name="project_id", backend=backend),
        deprovisioned=_each(
            project_deprovision, undeprovisioned, id_name="project_id", backend=backend
        ),
    )
