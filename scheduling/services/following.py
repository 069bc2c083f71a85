"""Following launched workloads: their status in the cluster, one listing per namespace, and
the runtime and idle rules of their tiers. Ending and requeueing go through `lifecycle`."""

from django.db import transaction

from portal import clock
from portal.events import Event, publish

from ..cluster import ClusterBackend
from ..cluster.manifests import workload_primary_object
from ..cluster.specs import NODE_LOST, GpuReading, Phase, WorkloadStatus
from ..models import Cluster, Node, Placement, Workload
from .clusters import workloads_in
from .lifecycle import workload_end, workload_requeue
from .timeline import workload_event_record

# Below this GPU utilization a workload counts as idle.
IDLE_UTILIZATION = 0.05
# What a workload monitoring does not see reads as.
UNSEEN = GpuReading(utilization=None, memory_used=None)


def _status_follow(workload: Workload, status: WorkloadStatus, *, backend: ClusterBackend) -> None:
    """Move a launched workload's state along its status in the cluster; one that stays
    where it is costs no statement."""
    if status.phase == Phase.RUNNING and workload.state == Workload.State.ADMITTED:
        now = clock.now()
        with transaction.atomic():
            updated = Workload.objects.filter(pk=workload.pk, state=Workload.State.ADMITTED).update(
                state=Workload.State.RUNNING, started_at=now
            )
            if updated:
                # Metering counts each placement from here, in the same transaction.
                Placement.objects.filter(
                    workload=workload, ended_at__isnull=True, running_at__isnull=True
                ).update(running_at=now)
                workload_event_record(
                    workload, "running", f"{status.ready_replicas} replica(s) running."
                )
                publish(Event.WORKLOAD_STATE_CHANGED, workload_ids=[str(workload.pk)])
    elif status.phase == Phase.FAILED and status.reason == NODE_LOST:
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
    listing per namespace, however many workloads it runs, and a write only for those whose
    state moves. The number followed."""
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
        for workload in workloads:
            _status_follow(workload, statuses[workload.object_name], backend=backend)
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
    for workload in watched:
        reading = readings.get((workload.project.namespace, workload.object_name), UNSEEN)
        fields = {
            "gpu_utilization": reading.utilization,
            "gpu_memory_used": reading.memory_used,
            "gpu_seen_at": now,
        }
        if reading.utilization is not None:  # unknown changes nothing: never act on the unseen
            idle = reading.utilization < IDLE_UTILIZATION
            fields["idle_since"] = (workload.idle_since or now) if idle else None
            if not idle:
                fields["idle_warned_at"] = None
        Workload.objects.filter(pk=workload.pk).update(**fields)
        tier = workload.tier
        idle_limited = tier.idle_warn_after is not None or tier.idle_stop_after is not None
        if fields.get("idle_since") is not None and idle_limited:
            _idle_rule(workload, idle_since=fields["idle_since"], now=now, backend=backend)
