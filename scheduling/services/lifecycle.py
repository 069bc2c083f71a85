"""A workload's way through the cluster: its launch and teardown, the one way to end it, the
one way to requeue it, and what eviction does (its status is followed in `following`).

Calls to the cluster happen outside database transactions; each is idempotent, so a task that
is killed half-way and run again loses nothing."""

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Prefetch

from portal import clock
from portal.db import rows_update
from portal.errors import Conflict, Forbidden
from portal.events import Event, publish
from tenants.permissions import (
    Caller,
    caller_role,
)
from tenants.services import audit_record

from ..cluster import ClusterBackend, ClusterError, manifests_delete
from ..cluster.manifests import (
    workload_manifests,
)
from ..models import (
    Placement,
    ProvisioningRecord,
    Workload,
    WorkloadEvent,
)
from ..selectors import workload_cancel_permitted
from ..specs_from_models import (
    workload_spec,
)
from .evictions import evictions_record
from .log_tails import workload_log_tails_keep
from .timeline import workload_event, workload_event_record

logger = logging.getLogger(__name__)

# What ending a workload writes of its row.
ENDED_FIELDS = ["state", "status_reason", "finished_at", "teardown_due_at"]


def _placements_end(*workloads: Workload, now) -> None:
    Placement.objects.filter(workload__in=workloads, ended_at__isnull=True).update(ended_at=now)


def _ended(
    endings: Sequence[tuple[Workload, str, dict]],
    *,
    state: str,
    worker_deletes: bool,
    now: datetime | None = None,
) -> None:
    """Write the end of workloads locked and not yet final, each with its reason and its
    timeline event's data, in a few statements however many: their state, reason and finish
    time; due for teardown if they were admitted; their placements ended (their GPUs are
    released); a timeline event each. When `worker_deletes`, the worker deletes the admitted
    ones' cluster objects after commit. ``now``: the moment they end (an eviction's)."""
    now = now or clock.now()
    workloads = [workload for workload, _, _ in endings]
    for workload, reason, _ in endings:
        workload.state = state
        workload.status_reason = reason[:500]
        workload.finished_at = now
        if workload.admitted_at is not None:
            workload.teardown_due_at = now
    rows_update(workloads, ENDED_FIELDS)
    _placements_end(*workloads, now=now)
    WorkloadEvent.objects.bulk_create(
        workload_event(workload, state.lower(), reason or state, at=now, **data)
        for workload, reason, data in endings
    )
    if workloads:
        publish(Event.WORKLOAD_STATE_CHANGED, workload_ids=[str(w.pk) for w in workloads])
    if worker_deletes:
        for workload in workloads:
            if workload.admitted_at is not None:
                publish(Event.WORKLOAD_RELEASED, workload_id=str(workload.pk))


def workload_end(
    *,
    workload_id,
    state: str,
    reason: str,
    caller: Caller | None = None,
    event_data: dict | None = None,
    backend: ClusterBackend | None = None,
) -> Workload | None:
    """The one way a workload ends (succeeded, failed, cancelled, preempted, expired).

    Its GPUs are released and its timeline says why; a person's decision is audited. If it was
    admitted, its cluster objects go too: at once when the worker passes its backend, otherwise
    through the worker after commit; until they are gone it is due for teardown, so that the
    reconciler finishes the job if a worker dies. If it had already ended: a Conflict for a
    person, None for the worker (another one got there first, or it no longer exists).
    """
    with transaction.atomic():
        workload = Workload.objects.select_for_update().filter(pk=workload_id).first()
        if workload is None:
            return None
        if workload.is_final and caller is not None:
            raise Conflict(f"The workload is already {workload.state}.", code="workload_finished")
        if workload.is_final:
            return None
        _ended([(workload, reason, event_data or {})], state=state, worker_deletes=backend is None)
        if caller is not None:
            audit_record(
                caller=caller,
                organization=workload.project.organization,
                action=f"workload.{state.lower()}",
                target=workload,
                payload={"reason": reason},
            )
    if workload.admitted_at is not None and backend is not None:
        workload_objects_delete(workload_id=workload.pk, backend=backend)
    return workload


def _back_to_queue(workload: Workload, *, reason: str) -> None:
    """What going back to the queue changes of a workload (not saved): pending again, placed
    nowhere, launched never; its submit time, hence its place, kept."""
    workload.state = Workload.State.PENDING
    workload.admitted_at = workload.launch_started_at = workload.launched_at = None
    workload.started_at = None
    workload.gpu_class = None
    workload.borrowed = False
    workload.status_reason = reason[:500]


# What an eviction that requeues writes of a workload's row.
EVICTED_FIELDS = [
    "state",
    "admitted_at",
    "launch_started_at",
    "launched_at",
    "started_at",
    "gpu_class",
    "borrowed",
    "status_reason",
    "teardown_due_at",
    "preempted_by",
    "evictions",
    "requeue_not_before",
]


def eviction_backoff(evictions: int) -> timedelta:
    """How long an evicted workload waits before it may be placed again: doubling with each
    eviction, at most sixteen times the first."""
    return timedelta(seconds=settings.PORTAL_EVICTION_BACKOFF_SECONDS * 2 ** min(evictions - 1, 4))


def workloads_evict(
    *,
    reasons: Mapping[str, str],
    preempted_by: Mapping[str, str | None],
    event_data: Mapping[str, dict],
) -> list[Workload]:
    """A scheduling cycle's preemption victims, in a few statements however many (all keyed by
    workload id). Each goes back to the queue, keeping its place by submit time, after a
    backoff, unless its submitter opted out or it was already evicted PORTAL_EVICTIONS_MAX
    times: then it ends preempted. Either way its GPUs are released, its objects go through
    the worker after commit, and its timeline says why. Those that had already ended are left
    alone. ``preempted_by`` names the workload each was evicted for (None: it was drained for
    a reservation). The requeued."""
    with transaction.atomic():
        locked = Workload.objects.select_for_update().filter(pk__in=list(reasons)).order_by("pk")
        victims = [workload for workload in locked if not workload.is_final]
        for workload in victims:
            workload.preempted_by_id = preempted_by.get(str(workload.pk))
        requeued = [
            w
            for w in victims
            if w.requeue_on_eviction and w.evictions < settings.PORTAL_EVICTIONS_MAX
        ]
        ended = [w for w in victims if w not in requeued]
        now = clock.now()
        # Recorded while the victims still hold their placements: the work they lose.
        timeline = evictions_record(
            victims,
            reasons=reasons,
            codes={key: data.get("reason", "") for key, data in event_data.items()},
            preempted_by=preempted_by,
            requeued=requeued,
            now=now,
        )

        def told(workload: Workload) -> tuple[str, dict]:
            message, contract = timeline[str(workload.pk)]
            return message, {**event_data.get(str(workload.pk), {}), **contract}

        rows_update(ended, ["preempted_by"])
        _ended(
            [(w, *told(w)) for w in ended],
            state=Workload.State.PREEMPTED,
            worker_deletes=True,
            now=now,
        )
        events = []
        for workload in requeued:
            workload.teardown_due_at = now if workload.admitted_at is not None else None
            workload.evictions += 1
            reason, data = told(workload)
            # Not before its old pods are gone either: they keep its objects' names until then.
            workload.requeue_not_before = now + max(
                eviction_backoff(workload.evictions), timedelta(seconds=data["notice_seconds"])
            )
            _back_to_queue(workload, reason=reason)
            back = workload.requeue_not_before.strftime("%H:%M:%S")
            events += [
                workload_event(workload, "preempted", reason, at=now, **data),
                workload_event(
                    workload,
                    "requeued",
                    f"Back in the queue from {back} UTC (eviction {workload.evictions} of"
                    f" {settings.PORTAL_EVICTIONS_MAX}).",
                    at=now,
                ),
            ]
            if workload.teardown_due_at is not None:
                publish(Event.WORKLOAD_RELEASED, workload_id=str(workload.pk))
        rows_update(requeued, EVICTED_FIELDS)
        if requeued:
            publish(Event.WORKLOAD_STATE_CHANGED, workload_ids=[str(w.pk) for w in requeued])
        _placements_end(*requeued, now=now)
        WorkloadEvent.objects.bulk_create(events)
    return requeued


def workload_requeue(
    *,
    workload_id,
    reason: str,
    caller: Caller | None = None,
    backend: ClusterBackend | None = None,
) -> Workload | None:
    """The one way an admitted or running workload goes back to the queue, whole gang at once.

    Its GPUs are released and it waits pending again; a person's decision is audited. Its objects
    are deleted first when the worker passes its backend (a failed delete then retries with
    nothing changed), otherwise by the worker after commit (it is due for teardown until then).
    None if it was no longer active.
    """
    if backend is not None:
        workload_objects_delete(workload_id=workload_id, backend=backend)
    with transaction.atomic():
        workload = Workload.objects.select_for_update().filter(pk=workload_id).first()
        if workload is None or workload.state not in Workload.ACTIVE_STATES:
            return None
        now = clock.now()
        if backend is None:
            workload.teardown_due_at = now
            publish(Event.WORKLOAD_RELEASED, workload_id=str(workload.pk))
        _placements_end(workload, now=now)
        _back_to_queue(workload, reason=reason)
        workload.save()
        workload_event(workload, "requeued", reason, at=now).save()
        publish(Event.WORKLOAD_STATE_CHANGED, workload_ids=[str(workload.pk)])
        if caller is not None:
            audit_record(
                caller=caller,
                organization=workload.project.organization,
                action="workload.requeue",
                target=workload,
                payload={"reason": reason},
            )
    return workload


def _for_cluster():
    """Workloads with what their manifests need: project, organization, tier, GPU class,
    submitter, and their placements' nodes."""
    return Workload.objects.select_related(
        "project__organization", "tier", "gpu_class", "submitted_by"
    ).prefetch_related(
        Prefetch("placements", queryset=Placement.objects.select_related("node__pool__gpu_class"))
    )


def _workload_for_cluster(workload_id) -> Workload | None:
    """The workload with what its manifests need; None once it no longer exists (its
    organization was deleted), when a late task has nothing left to do."""
    return _for_cluster().filter(pk=workload_id).first()


def _manifests_of(workload: Workload) -> list[dict]:
    """Its objects as its current admission placed them: its replicas and their nodes."""
    placements = [
        placement
        for placement in workload.placements.all()
        if workload.admitted_at and placement.started_at == workload.admitted_at
    ]
    return workload_manifests(workload_spec(workload, placements=placements))


def workload_objects_delete(*, workload_id, backend: ClusterBackend) -> None:
    """Delete the workload's Kubernetes objects (already gone is fine); an ended workload's
    logs go with them, so the tail of each replica's log is kept first."""
    workload = _workload_for_cluster(workload_id)
    if workload is None:
        return
    if workload.is_final and workload.launched_at and workload.objects_deleted_at is None:
        workload_log_tails_keep(workload=workload, backend=backend)
    manifests_delete(backend, _manifests_of(workload))
    Workload.objects.filter(pk=workload.pk).update(
        objects_deleted_at=clock.now(), teardown_due_at=None
    )


def _launch(workload: Workload, *, victims: Sequence, backend: ClusterBackend) -> bool:
    """Create one workload's objects after its preemption victims' (their ids) are gone; True
    once they exist. One the cluster refuses for good ends failed with the reason."""
    for victim_id in victims:
        workload_objects_delete(workload_id=victim_id, backend=backend)
    try:
        for manifest in _manifests_of(workload):
            backend.apply(manifest)
    except ClusterError as error:
        if error.retryable:
            raise
        workload_end(
            workload_id=workload.pk,
            state=Workload.State.FAILED,
            reason=f"The cluster refused it: {error}",
        )
        return False
    return True


def _launched_record(workloads: list[Workload]) -> None:
    now = clock.now()
    with transaction.atomic():
        Workload.objects.filter(
            pk__in=[workload.pk for workload in workloads], launched_at__isnull=True
        ).update(launched_at=now)
        WorkloadEvent.objects.bulk_create(
            workload_event(
                workload,
                "launched",
                f"Objects created in namespace {workload.project.namespace}.",
                at=now,
            )
            for workload in workloads
        )


def workloads_launch(*, workload_ids: Sequence, backend: ClusterBackend) -> list[Workload]:
    """Create the objects of admitted workloads, each after its preemption victims' are gone,
    and record them launched together (a few statements for the lot, besides the cluster's
    own). Those launched already, ended or gone are skipped, so a repeated launch (redelivered,
    or the reconciler's) does nothing. Those whose namespace is still being made wait: a
    retryable ClusterError once the others are launched, and the task retries with backoff.
    The launched."""
    due = [
        workload
        for workload in _for_cluster().filter(
            pk__in=workload_ids, state=Workload.State.ADMITTED, launched_at__isnull=True
        )
    ]
    ready = set(
        ProvisioningRecord.objects.filter(
            project__in={workload.project_id for workload in due},
            state=ProvisioningRecord.State.READY,
        ).values_list("project_id", "cluster_id")
    )
    starting = [workload for workload in due if _namespace_ready(workload, ready=ready)]
    # Their launch starts now (the reconciler's grace counts from here), and whose objects
    # must go first: a statement each for them all.
    Workload.objects.filter(pk__in=[w.pk for w in starting]).update(launch_started_at=clock.now())
    victims: dict = {}
    for victim_id, winner_id in Workload.objects.filter(
        preempted_by__in=[w.pk for w in starting], objects_deleted_at__isnull=True
    ).values_list("pk", "preempted_by"):
        victims.setdefault(winner_id, []).append(victim_id)
    launched: list[Workload] = []
    try:
        for workload in starting:
            if _launch(workload, victims=victims.get(workload.pk, ()), backend=backend):
                launched.append(workload)
    finally:
        # What reached the cluster is recorded even when a later launch raised.
        _launched_record(launched)
    waiting = sorted({w.project.namespace for w in set(due) - set(starting)})
    if waiting:
        raise ClusterError(
            f"Namespace {', '.join(waiting)} is not provisioned yet.", retryable=True
        )
    return launched


def _namespace_ready(workload: Workload, *, ready: set[tuple]) -> bool:
    """Whether the project's namespace is provisioned in the cluster the workload is placed in
    (`ready`: the (project, cluster) pairs of the ready records). A record of no cluster is
    the settings' backend's, which reaches every cluster it drives."""
    placements = workload.placements.all()
    current = [p for p in placements if p.started_at == workload.admitted_at] or placements
    clusters = {placement.node.pool.cluster_id for placement in current}
    return (workload.project_id, None) in ready or (
        bool(clusters) and all((workload.project_id, cluster) in ready for cluster in clusters)
    )


def workload_launch(*, workload_id, backend: ClusterBackend) -> Workload | None:
    """Launch one workload (see `workloads_launch`); the workload, None if it no longer
    exists."""
    workloads_launch(workload_ids=[workload_id], backend=backend)
    return Workload.objects.filter(pk=workload_id).first()


def workloads_launch_give_up(workload_ids, cluster: str = "", *, reason: str) -> None:
    """The launches (in the named cluster) retried in vain: those still waiting to launch end
    failed."""
    where = f"cluster {cluster}" if cluster else "the cluster"
    unlaunched = Workload.objects.filter(
        pk__in=workload_ids, state=Workload.State.ADMITTED, launched_at__isnull=True
    ).values_list("pk", flat=True)
    for workload_id in unlaunched:
        workload_end(
            workload_id=workload_id,
            state=Workload.State.FAILED,
            reason=f"Its objects could not be created in {where}: {reason}",
        )


def workload_objects_delete_give_up(workload_id, cluster: str = "", *, reason: str) -> None:
    """Its objects may still be in the cluster (the named one): tell the operator (its GPUs
    are released)."""
    workload = Workload.objects.filter(pk=workload_id).first()
    logger.error("Teardown of workload %s failed for good (%s): %s", workload_id, cluster, reason)
    if workload is None:
        return
    workload_event_record(
        workload, "teardown_failed", f"Its objects could not be deleted: {reason}"
    )


def workload_cancel(*, caller: Caller, workload: Workload) -> Workload:
    role = caller_role(caller=caller, organization=workload.project.organization)
    if not workload_cancel_permitted(caller=caller, workload=workload, role=role):
        raise Forbidden("Only its submitter, an admin or an owner may cancel it.")
    if not caller.can_write:
        raise Forbidden("This API token is read-only.")
    return workload_end(
        workload_id=workload.pk,
        state=Workload.State.CANCELLED,
        reason=f"Cancelled by {caller.user.email}.",
        caller=caller,
    )
