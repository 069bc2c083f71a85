"""Following launched workloads: their status in the cluster, one listing per namespace, and
the runtime and idle rules of their tiers. Ending and requeueing go through `lifecycle`."""

from django.db import transaction

from portal import clock
from portal.db import rows_update
from portal.events import Event, publish

from ..cluster import ClusterBackend
from ..cluster.manifests import workload_primary_object
from ..cluster.specs import NODE_LOST, GpuReading, Phase, WorkloadStatus
from ..models import Cluster, Node, Placement, Workload, WorkloadEvent
from .clusters import workloads_in
from .lifecycle import workload_end, workload_requeue
from .timeline import workload_event, workload_event_record

# Below this GPU utilization a workload counts as idle.
IDLE_UTILIZATION = 0.05
# What a workload monitoring does not see reads as.
UNSEEN = GpuReading(utilization=None, memory_used=None)
# What `idle_and_runtime_check` writes of each running workload.
READING_FIELDS = [
    "gpu_utilization",
    "gpu_memory_used",
    "gpu_seen_at",
    "idle_since",
    "idle_warned_at",
]
# Workloads recorded running per transaction: the ids of a statement stay a few thousand.
RUNNING_CHUNK = 1_000


def _running_record(started: list[tuple[Workload, WorkloadStatus]]) -> None:
    """Record admitted workloads that run now as Running, in one transaction per chunk (a few
    statements for thousands): those that moved meanwhile (cancelled) are left as they are."""
    now = clock.now()
    for at in range(0, len(started), RUNNING_CHUNK):
        chunk = dict((w.pk, (w, status)) for w, status in started[at : at + RUNNING_CHUNK])
        with transaction.atomic():
            moved = list(
                Workload.objects.select_for_update()
                .filter(pk__in=chunk, state=Workload.State.ADMITTED)
                .order_by("pk")  # locked in one order, whatever order the ids came in
                .values_list("pk", flat=True)
            )
            if not moved:
                continue
            Workload.objects.filter(pk__in=moved).update(
                state=Workload.State.RUNNING, started_at=now
            )
            # Metering counts each placement from here, in the same transaction.
            Placement.objects.filter(
                workload_id__in=moved, ended_at__isnull=True, running_at__isnull=True
            ).update(running_at=now)
            WorkloadEvent.objects.bulk_create(
                workload_event(
                    chunk[pk][0],
                    "running",
                    f"{chunk[pk][1].ready_replicas} replica(s) running.",
                    at=now,
                )
                for pk in moved
            )
            publish(Event.WORKLOAD_STATE_CHANGED, workload_ids=[str(pk) for pk in moved])


def _status_follow(workload: Workload, status: WorkloadStatus, *, backend: ClusterBackend) -> None:
    """Move a launched workload's state along its status in the cluster when it failed or
    ended (`_running_record` records those that run)."""
    if status.phase == Phase.FAILED and status.reason == NODE_LOST:
        # Place nothing more there until the inventory sees the node ready again.
        Node.objects.filter(name__in=status.lost_nodes).update(ready=False)
        workload_requeue(
            workload_id=workload.pk,
            reason=f"{status.message} The gang was requeued.",
            backend=backend,
        )
    elif status.phase in (Phase.SUCCEEDED, Phase.FAILED, Phase.MISSING):
        if status.phase == Phase.SUCCEEDED:
            state, reason = Workload.State.SUCCEEDED, "Completed."
        elif status.phase == Phase.MISSING:
            state, reason = Workload.State.FAILED, "Its objects disappeared from the cluster."
        else:
            # Kubernetes ends a Job past activeDeadlineSeconds this way: its runtime ran out.
            expired = status.reason == "DeadlineExceeded"
            state = Workload.State.EXPIRED if expired else Workload.State.FAILED
            reason = f"{status.reason}: {status.message}".strip(": ")
        workload_end(workload_id=workload.pk, state=state, reason=reason, backend=backend)


def workloads_sync(*, backend: ClusterBackend, cluster: Cluster | None = None) -> int:
    """Follow every launched workload (of the cluster; None: of every cluster): one status
    listing per namespace, however many workloads it runs; those that run now recorded
    together, a write for each that ended. The number followed."""
    launched = workloads_in(
        Workload.objects.filter(state__in=Workload.ACTIVE_STATES, launched_at__isnull=False)
        .select_related("project")
        .only("pk", "name", "kind", "state", "project__namespace"),
        cluster,
        active=True,
    )
    by_namespace: dict[str, list[Workload]] = {}
    for workload in launched:
        by_namespace.setdefault(workload.project.namespace, []).append(workload)
    for namespace, workloads in by_namespace.items():
        statuses = backend.workload_statuses(
            namespace=namespace,
            workloads={w.object_name: workload_primary_object(kind=w.kind)[1] for w in workloads},
        )
        started = []
        for workload in workloads:
            status = statuses[workload.object_name]
            if status.phase == Phase.RUNNING and workload.state == Workload.State.ADMITTED:
                started.append((workload, status))
            else:
                _status_follow(workload, status, backend=backend)
        _running_record(started)
    return sum(map(len, by_namespace.values()))


def _idle_rule(workload: Workload, *, idle_since, now, backend: ClusterBackend) -> None:
    """Warn once a workload's GPUs idle past its tier's warning, stop it past the limit."""
    tier = workload.tier
    idle_for = now - idle_since
    if tier.idle_stop_after is not None and idle_for >= tier.idle_stop_after:
        workload_end(
            workload_id=workload.pk,
            state=Workload.State.CANCELLED,
            reason=f"Stopped: its GPUs were idle for {int(idle_for.total_seconds() // 60)} min.",
            backend=backend,
        )
        return
    warn = tier.idle_warn_after is not None and idle_for >= tier.idle_warn_after
    if warn and workload.idle_warned_at is None:
        Workload.objects.filter(pk=workload.pk).update(idle_warned_at=now)
        stop = f" and will be stopped after {tier.idle_stop_after}" if tier.idle_stop_after else ""
        workload_event_record(
            workload, "idle_warning", f"Its GPUs have been idle for {idle_for}{stop}."
        )


def idle_and_runtime_check(*, backend: ClusterBackend, cluster: Cluster | None = None) -> None:
    """Stop over-runtime workloads (of the cluster; None: of every cluster); record what
    monitoring sees of each running workload's GPUs (one reading of them all); warn, then
    stop, workloads idle past their tier's limits."""
    now = clock.now()
    running = workloads_in(
        Workload.objects.filter(state=Workload.State.RUNNING).select_related("tier", "project"),
        cluster,
        active=True,
    )
    watched = []
    for workload in running:
        if workload.expected_end and workload.expected_end <= now:
            workload_end(
                workload_id=workload.pk,
                state=Workload.State.EXPIRED,
                reason=f"Stopped at its maximum runtime ({workload.max_runtime}).",
                backend=backend,
            )
        elif workload.needs_gpu:
            watched.append(workload)
    asked: dict[str, set[str]] = {}
    for workload in watched:
        asked.setdefault(workload.project.namespace, set()).add(workload.object_name)
    readings = backend.gpu_readings(workloads=asked) if asked else {}
    seen_idle = []
    for workload in watched:
        reading = readings.get((workload.project.namespace, workload.object_name), UNSEEN)
        workload.gpu_utilization, workload.gpu_memory_used = (
            reading.utilization,
            reading.memory_used,
        )
        workload.gpu_seen_at = now
        if reading.utilization is not None:  # unknown changes nothing: never act on the unseen
            idle = reading.utilization < IDLE_UTILIZATION
            workload.idle_since = (workload.idle_since or now) if idle else None
            if idle:
                seen_idle.append(workload)
            else:
                workload.idle_warned_at = None
    # What monitoring saw, in one statement for thousands (this pass alone writes these).
    rows_update(watched, READING_FIELDS)
    for workload in seen_idle:
        tier = workload.tier
        if tier.idle_warn_after is not None or tier.idle_stop_after is not None:
            _idle_rule(workload, idle_since=workload.idle_since, now=now, backend=backend)
