"""Every write of scheduling: inventory, provisioning, submission, the scheduling cycle, and
following workloads through the cluster to their end.

This module is the only bridge between the ORM and the engine: it loads rows, converts them
(`specs_from_models`), calls the engine, and persists the decisions in one transaction. Calls
to the cluster happen outside database transactions; every one of them is idempotent, so a
task that is killed half-way and run again loses nothing.
"""

import logging
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection, transaction

from tenants.models import Organization, Project
from tenants.permissions import (
    Action,
    Caller,
    authorize,
    caller_role,
    require_operator,
    role_allows,
)
from tenants.services import Conflict, audit_record

from . import clock, engine
from .cluster import ClusterBackend, ClusterError
from .cluster.catalog import cluster_description_load
from .cluster.manifests import (
    node_labels,
    priority_class_manifest,
    project_manifests,
    workload_manifests,
    workload_primary_object,
)
from .cluster.specs import NodeInventory, Phase
from .models import (
    GpuClass,
    Node,
    NodePool,
    Placement,
    PriorityTier,
    ProvisioningRecord,
    QuotaGrant,
    SchedulerState,
    Workload,
    WorkloadEvent,
)
from .specs_from_models import (
    POOL_LABEL,
    engine_nodes,
    engine_quotas,
    engine_request,
    engine_running,
    gpu_tolerations,
    node_spec,
    project_spec,
    tier_spec,
    topology_levels,
    workload_spec,
)

logger = logging.getLogger(__name__)

# Any stable 64-bit number: the PostgreSQL advisory lock that lets one cycle run at a time.
CYCLE_LOCK_KEY = 7_340_501_206
# Below this GPU utilization a workload counts as idle.
IDLE_UTILIZATION = 0.05
GPU_KINDS = (
    Workload.Kind.TRAINING,
    Workload.Kind.FINE_TUNING,
    Workload.Kind.BATCH_INFERENCE,
    Workload.Kind.INFERENCE,
)


def event_record(workload: Workload, kind: str, message: str, **data) -> WorkloadEvent:
    return WorkloadEvent.objects.create(
        workload=workload, at=clock.now(), kind=kind, message=message[:500], data=data
    )


# Catalog and inventory


@transaction.atomic
def cluster_catalog_load(*, path: Path) -> None:
    """GPU classes, pools and tiers from a cluster description file; idempotent."""
    description = cluster_description_load(path)
    for item in description.gpu_classes:
        GpuClass.objects.update_or_create(
            name=item["name"],
            defaults={
                "memory_gib": item["memory_gib"],
                "products": item.get("products", []),
                "mig_profiles": item.get("mig_profiles", []),
            },
        )
    for item in description.pools:
        NodePool.objects.update_or_create(
            name=item["name"],
            defaults={
                "gpu_class": GpuClass.objects.get(name=item["gpu_class"]),
                "purpose": item["purpose"],
                "topology_keys": item.get("topology_keys", []),
                "labels": item.get("labels", {}),
            },
        )
    for item in description.tiers:
        minutes = {k: item.get(f"{k}_minutes") for k in ("idle_warn_after", "idle_stop_after")}
        PriorityTier.objects.update_or_create(
            name=item["name"],
            defaults={
                "value": item["value"],
                "preemptible": item["preemptible"],
                "description": item.get("description", ""),
                **{k: timedelta(minutes=v) if v else None for k, v in minutes.items()},
            },
        )


def _pool_of(inventory: NodeInventory, pools: list[NodePool]) -> NodePool | None:
    """The pool a node belongs to: named by its pool label, or the pool whose labels it
    carries, or the only pool of its GPU product."""
    named = inventory.labels.get(POOL_LABEL)
    for pool in pools:
        if pool.name == named:
            return pool
    product = inventory.labels.get("nvidia.com/gpu.product")
    for pool in pools:
        if pool.labels and all(inventory.labels.get(k) == v for k, v in pool.labels.items()):
            return pool
    by_product = [p for p in pools if product in p.gpu_class.products]
    return by_product[0] if len(by_product) == 1 else None


def _quantity_milli(value: str) -> int:
    """A Kubernetes CPU quantity ("48", "500m") in milli-cores."""
    return int(value[:-1]) if value.endswith("m") else int(float(value) * 1000)


def _quantity_mib(value: str) -> int:
    units = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "Ti": 1024 * 1024}
    for suffix, factor in units.items():
        if value.endswith(suffix):
            return int(float(value[: -len(suffix)]) * factor)
    return int(value) // (1024 * 1024)


def inventory_sync(*, backend: ClusterBackend) -> list[str]:
    """Bring the Node table to what the cluster reports; requeue the gangs of lost nodes.
    Returns the names of the lost nodes that still held workloads."""
    reported = backend.list_nodes()
    pools = list(NodePool.objects.select_related("gpu_class"))
    now = clock.now()
    seen: set[str] = set()
    with transaction.atomic():
        for inventory in reported:
            pool = _pool_of(inventory, pools)
            if pool is None:
                continue
            seen.add(inventory.name)
            mig = {
                key.removeprefix("nvidia.com/"): int(count)
                for key, count in inventory.allocatable.items()
                if key.startswith("nvidia.com/mig-")
            }
            Node.objects.update_or_create(
                name=inventory.name,
                defaults={
                    "pool": pool,
                    "gpu_count": int(inventory.allocatable.get(pool.gpu_class.resource_name, 0)),
                    "mig_layout": mig,
                    "cpu_milli": _quantity_milli(inventory.allocatable.get("cpu", "0")),
                    "memory_mib": _quantity_mib(inventory.allocatable.get("memory", "0")),
                    "topology": {
                        key: inventory.labels[key]
                        for key in pool.topology_keys
                        if key in inventory.labels
                    },
                    "labels": dict(inventory.labels),
                    "ready": inventory.ready,
                    "last_seen_at": now,
                },
            )
        Node.objects.exclude(name__in=seen).update(ready=False)
    lost = sorted(
        set(
            Placement.objects.filter(ended_at__isnull=True, node__ready=False).values_list(
                "node__name", flat=True
            )
        )
    )
    for workload in Workload.objects.filter(
        state__in=Workload.ACTIVE_STATES,
        placements__ended_at__isnull=True,
        placements__node__name__in=lost,
    ).distinct():
        on_lost = sorted(
            workload.placements.filter(ended_at__isnull=True, node__name__in=lost).values_list(
                "node__name", flat=True
            )
        )
        workload_requeue_after_node_loss(
            workload_id=workload.pk,
            backend=backend,
            reason=f"Node {', '.join(on_lost)} is no longer ready.",
        )
    return lost


# Provisioning


def _provisioning_record(project: Project | None) -> ProvisioningRecord:
    if project is None:
        record, _ = ProvisioningRecord.objects.get_or_create(project=None, scope="cluster")
    else:
        record, _ = ProvisioningRecord.objects.get_or_create(project=project)
    return record


def _provisioning_result(record: ProvisioningRecord, *, error: ClusterError | None, done: str):
    record.attempts += 1
    if error is None:
        record.state, record.error = done, ""
        record.provisioned_at = clock.now()
    elif not error.retryable:
        record.state, record.error = ProvisioningRecord.State.FAILED, str(error)
    else:
        record.error = f"Retrying: {error}"
    record.save()
    if error is not None and error.retryable:
        raise error


def provisioning_give_up(project_id=None, *, reason: str) -> ProvisioningRecord:
    """The cluster kept failing: record why, for the project's users and for operators."""
    project = Project.objects.filter(pk=project_id).first() if project_id else None
    record = _provisioning_record(project)
    record.state = ProvisioningRecord.State.FAILED
    record.error = f"Gave up after retries: {reason}"
    record.save(update_fields=["state", "error", "updated_at"])
    return record


def _apply_all(backend: ClusterBackend, manifests: list[dict]) -> ClusterError | None:
    try:
        for manifest in manifests:
            backend.apply(manifest)
    except ClusterError as error:
        return error
    return None


def project_provision(*, project_id, backend: ClusterBackend) -> ProvisioningRecord:
    """Ensure the project's namespace, quota, limits, service account, role binding and
    network policy. Re-running changes nothing; a retryable failure is raised for a retry."""
    project = Project.objects.select_related("organization").get(pk=project_id)
    record = _provisioning_record(project)
    if project.deleted_at is not None:
        return record
    error = _apply_all(backend, project_manifests(project_spec(project)))
    _provisioning_result(record, error=error, done=ProvisioningRecord.State.READY)
    return record


def project_deprovision(*, project_id, backend: ClusterBackend) -> ProvisioningRecord:
    """Stop the project's workloads, then remove its objects from the cluster."""
    project = Project.objects.select_related("organization").get(pk=project_id)
    for workload in Workload.objects.filter(project=project).exclude(
        state__in=Workload.FINAL_STATES
    ):
        workload_finish(
            workload_id=workload.pk,
            state=Workload.State.CANCELLED,
            reason="Its project was deleted.",
        )
    for workload in Workload.objects.filter(project=project, objects_deleted_at__isnull=True):
        workload_objects_delete(workload_id=workload.pk, backend=backend)
    record = _provisioning_record(project)
    error = None
    try:
        for manifest in reversed(project_manifests(project_spec(project))):
            metadata = manifest["metadata"]
            backend.delete(
                api_version=manifest["apiVersion"],
                kind=manifest["kind"],
                name=metadata["name"],
                namespace=metadata.get("namespace"),
            )
    except ClusterError as failure:
        error = failure
    _provisioning_result(record, error=error, done=ProvisioningRecord.State.REMOVED)
    return record


def quota_grant_save(*, caller: Caller, grant: QuotaGrant) -> QuotaGrant:
    """An operator sets a quota: validated, audited, and the organization's namespaces get
    their ResourceQuota updated by the worker."""
    require_operator(caller)
    grant.full_clean()
    with transaction.atomic():
        grant.save()
        audit_record(
            caller=caller,
            organization=grant.organization,
            action="quota.set",
            target=grant,
            payload={
                "gpu_class": grant.gpu_class.name,
                "guarantee": grant.guarantee,
                "limit": grant.limit,
                "cohort": grant.cohort,
            },
        )
        _reprovision_on_commit(grant.organization_id)
    return grant


def quota_grant_delete(*, caller: Caller, grant: QuotaGrant) -> None:
    require_operator(caller)
    with transaction.atomic():
        audit_record(
            caller=caller, organization=grant.organization, action="quota.delete", target=grant
        )
        organization_id = grant.organization_id
        grant.delete()
        _reprovision_on_commit(organization_id)


def _reprovision_on_commit(organization_id) -> None:
    from .tasks import project_provision

    for project_id in Project.objects.filter(
        organization_id=organization_id, deleted_at__isnull=True
    ).values_list("pk", flat=True):
        transaction.on_commit(
            lambda project_id=project_id: project_provision.delay(str(project_id))
        )


def cluster_provision(*, backend: ClusterBackend) -> ProvisioningRecord:
    """Priority classes for the tiers; labels and taints of every node of every pool."""
    record = _provisioning_record(None)
    error = _apply_all(
        backend, [priority_class_manifest(tier_spec(tier)) for tier in PriorityTier.objects.all()]
    )
    if error is None:
        try:
            for node in Node.objects.select_related("pool__gpu_class"):
                labels, taints = node_labels(node_spec(node))
                backend.label_node(name=node.name, labels=labels, taints=taints)
        except ClusterError as failure:
            error = failure
    _provisioning_result(record, error=error, done=ProvisioningRecord.State.READY)
    return record


def cluster_manifests(*, organization: Organization | None = None) -> list[dict]:
    """Every object the portal would apply for the current database, for a dry run."""
    manifests = [priority_class_manifest(tier_spec(tier)) for tier in PriorityTier.objects.all()]
    for node in Node.objects.select_related("pool__gpu_class"):
        labels, taints = node_labels(node_spec(node))
        manifests.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": node.name, "labels": labels},
                "spec": {
                    "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in taints]
                },
            }
        )
    projects = Project.objects.filter(deleted_at__isnull=True).select_related("organization")
    if organization is not None:
        projects = projects.filter(organization=organization)
    for project in projects.order_by("namespace"):
        manifests.extend(project_manifests(project_spec(project)))
    return manifests


# Submission


@dataclass(frozen=True)
class WorkloadRequest:
    """What a user asks for: the fields of a submission, validated by `workload_submit`."""

    name: str
    kind: str
    tier: str
    image: str
    gpu_classes: tuple[str, ...] = ()
    gpus: int = 0
    gpu_milli: int = 0
    mig_profile: str = ""
    mig_count: int = 0
    replicas: int = 1
    min_replicas: int | None = None
    cpu_milli: int = 1000
    memory_mib: int = 4096
    command: tuple[str, ...] = ()
    env: dict | None = None
    max_runtime: timedelta | None = None
    required_topology: str = ""


def _submission_errors(request: WorkloadRequest, project: Project) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    needs_gpu = bool(request.gpus or request.gpu_milli or request.mig_count)
    if request.kind in GPU_KINDS and not needs_gpu:
        errors["gpus"] = [
            f"A {request.kind} workload needs GPUs: set gpus, gpu_milli or mig_count."
        ]
    known = set(
        GpuClass.objects.filter(name__in=request.gpu_classes).values_list("name", flat=True)
    )
    unknown = [name for name in request.gpu_classes if name not in known]
    if unknown:
        errors["gpu_classes"] = [f"Unknown GPU class: {', '.join(unknown)}."]
    if request.mig_profile:
        offered = {
            profile
            for profiles in GpuClass.objects.filter(name__in=known).values_list(
                "mig_profiles", flat=True
            )
            for profile in profiles
        }
        if request.mig_profile not in offered:
            errors["mig_profile"] = [f"No acceptable GPU class offers {request.mig_profile}."]
    if request.required_topology:
        levels = topology_levels(NodePool.objects.all())
        if request.required_topology not in levels:
            errors["required_topology"] = [f"Use one of: {', '.join(levels) or 'none'}."]
    if Workload.objects.filter(project=project, name=request.name).exists():
        errors["name"] = [f"{project.slug} already has a workload named {request.name!r}."]
    return errors


@transaction.atomic
def workload_submit(*, caller: Caller, project: Project, request: WorkloadRequest) -> Workload:
    authorize(caller=caller, organization=project.organization, action=Action.WORKLOAD_SUBMIT)
    tier = PriorityTier.objects.filter(name=request.tier).first()
    errors = _submission_errors(request, project)
    if tier is None:
        errors["tier"] = [f"Unknown priority tier {request.tier!r}."]
    if errors:
        raise ValidationError(errors)
    workload = Workload(
        project=project,
        tier=tier,
        preemptible=tier.preemptible,
        submitted_by=caller.user,
        submitted_at=clock.now(),
        name=request.name,
        kind=request.kind,
        image=request.image,
        gpu_classes=list(request.gpu_classes),
        gpus=request.gpus,
        gpu_milli=request.gpu_milli,
        mig_profile=request.mig_profile,
        mig_count=request.mig_count,
        replicas=request.replicas,
        min_replicas=request.min_replicas,
        cpu_milli=request.cpu_milli,
        memory_mib=request.memory_mib,
        command=list(request.command),
        env=dict(request.env or {}),
        max_runtime=request.max_runtime,
        required_topology=request.required_topology,
    )
    workload.full_clean(exclude=["submitted_by", "gpu_class", "preempted_by"])
    pools = NodePool.objects.select_related("gpu_class")
    engine_errors = engine.validate_request(
        request=engine_request(workload, tolerations=gpu_tolerations(pools)),
        quotas=engine_quotas(
            QuotaGrant.objects.filter(organization=project.organization).select_related(
                "organization", "project", "gpu_class"
            )
        ),
        nodes=engine_nodes(
            Node.objects.filter(ready=True).select_related("pool__gpu_class"), active=()
        ),
    )
    if engine_errors:
        raise ValidationError(engine_errors)
    workload.save()
    event_record(workload, "submitted", f"Submitted by {caller.user.email}.")
    audit_record(
        caller=caller,
        organization=project.organization,
        action="workload.submit",
        target=workload,
        payload={"kind": workload.kind, "tier": tier.name, "gpus": workload.gpus},
    )
    from .tasks import scheduling_cycle

    transaction.on_commit(scheduling_cycle.delay)
    return workload


# The scheduling cycle


@dataclass(frozen=True)
class CycleResult:
    ran: bool
    admitted: tuple[str, ...] = ()
    preempted: tuple[str, ...] = ()
    pending: int = 0
    milliseconds: float = 0.0


def _cycle_lock() -> bool:
    """Take the cycle's lock for this transaction; False when another cycle holds it."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [CYCLE_LOCK_KEY])
            return bool(cursor.fetchone()[0])
    # SQLite has no advisory locks: the first write takes the database's write lock.
    state, _ = SchedulerState.objects.get_or_create(pk=1)
    SchedulerState.objects.filter(pk=state.pk).update(last_cycle_at=clock.now())
    return True


def _active_placements():
    return Placement.objects.filter(ended_at__isnull=True).select_related("node")


def scheduling_cycle_run(*, policy: engine.Policy | None = None) -> CycleResult:
    """Load a snapshot, let the engine decide, persist admissions, preemptions and pending
    reasons in one transaction; launch and stop on the cluster after it commits."""
    started = time.perf_counter()
    with transaction.atomic():
        if not _cycle_lock():
            return CycleResult(ran=False)
        now = clock.now()
        pools = list(NodePool.objects.select_related("gpu_class"))
        tolerations = gpu_tolerations(pools)
        placements = list(_active_placements())
        by_workload: dict = {}
        for placement in placements:
            by_workload.setdefault(placement.workload_id, []).append(placement)
        related = ("project__organization", "tier", "gpu_class")
        active = list(
            Workload.objects.filter(state__in=Workload.ACTIVE_STATES).select_related(*related)
        )
        pending = list(
            Workload.objects.filter(state=Workload.State.PENDING)
            .select_related(*related)
            .order_by("submitted_at")
        )
        ready_nodes = list(Node.objects.filter(ready=True).select_related("pool__gpu_class"))
        snapshot = engine.ClusterSnapshot(
            nodes=engine_nodes(ready_nodes, placements),
            quotas=engine_quotas(
                QuotaGrant.objects.select_related("organization", "project", "gpu_class")
            ),
            topology_levels=topology_levels(pools) or ("rack", "block"),
            tenant_weights={
                slug: float(weight)
                for slug, weight in Organization.objects.values_list("slug", "fair_share_weight")
            },
        )
        decisions = engine.schedule(
            snapshot=snapshot,
            pending=[engine_request(w, tolerations=tolerations) for w in pending],
            running=[
                engine_running(w, by_workload.get(w.pk, []), tolerations=tolerations)
                for w in active
            ],
            now=now,
            policy=policy or engine.Policy(placement=settings.PORTAL_PLACEMENT_POLICY),
        )
        workloads = {str(w.pk): w for w in [*pending, *active]}
        _persist(
            decisions,
            workloads=workloads,
            nodes={node.name: node for node in ready_nodes},
            classes={pool.gpu_class.name: pool.gpu_class for pool in pools},
            now=now,
        )
        elapsed = (time.perf_counter() - started) * 1000
        SchedulerState.objects.update_or_create(
            pk=1,
            defaults={
                "last_cycle_at": now,
                "last_cycle_ms": elapsed,
                "last_admitted": len(decisions.admissions),
                "last_preempted": len(decisions.preemptions),
                "last_pending": len(decisions.pending),
            },
        )
        admitted = tuple(a.request_id for a in decisions.admissions)
        preempted = tuple(p.victim_id for p in decisions.preemptions)
        from .tasks import workload_launch, workload_teardown

        for victim_id in preempted:
            transaction.on_commit(lambda victim_id=victim_id: workload_teardown.delay(victim_id))
        for workload_id in admitted:
            transaction.on_commit(
                lambda workload_id=workload_id: workload_launch.delay(workload_id)
            )
    return CycleResult(
        ran=True,
        admitted=admitted,
        preempted=preempted,
        pending=len(decisions.pending),
        milliseconds=elapsed,
    )


def _persist(
    decisions: engine.Decisions,
    *,
    workloads: dict[str, Workload],
    nodes: dict[str, Node],
    classes: dict[str, GpuClass],
    now,
) -> None:
    for preemption in decisions.preemptions:
        victim = workloads[preemption.victim_id]
        victim.preempted_by = workloads[preemption.preemptor_id]
        victim.save(update_fields=["preempted_by"])
        _finish(
            victim,
            state=Workload.State.PREEMPTED,
            reason=preemption.message,
            now=now,
            event_data={"by": preemption.preemptor_id, "reason": preemption.reason},
        )
    for admission in decisions.admissions:
        workload = workloads[admission.request_id]
        workload.state = Workload.State.ADMITTED
        workload.admitted_at = now
        workload.gpu_class = classes.get(admission.gpu_class)
        workload.borrowed = admission.borrowed
        workload.pending_code = workload.pending_message = ""
        workload.queue_position = workload.estimated_start = None
        workload.objects_deleted_at = None
        workload.save()
        Placement.objects.bulk_create(
            Placement(
                workload=workload,
                replica=index,
                node=nodes[placement.node],
                gpu_indices=list(placement.gpu_indices),
                gpu_milli=placement.gpu_milli,
                mig_profile=placement.mig_profile or "",
                mig_count=placement.mig_count,
                cpu_milli=placement.cpu_milli,
                memory_mib=placement.memory_mib,
                started_at=now,
            )
            for index, placement in enumerate(admission.placements)
        )
        where = ", ".join(sorted({p.node for p in admission.placements}))
        event_record(
            workload,
            "admitted",
            f"Admitted on {admission.gpu_class}: {len(admission.placements)} replica(s) on "
            f"{where}" + (" (borrowed capacity)" if admission.borrowed else "") + ".",
        )
    changed = []
    for reason in decisions.pending:
        workload = workloads[reason.request_id]
        if (workload.pending_code, workload.pending_message) != (reason.code, reason.message):
            event_record(workload, "pending", reason.message, code=reason.code)
        workload.pending_code = reason.code
        workload.pending_message = reason.message[:500]
        workload.queue_position = reason.queue_position
        workload.estimated_start = reason.estimated_start
        changed.append(workload)
    Workload.objects.bulk_update(
        changed, ["pending_code", "pending_message", "queue_position", "estimated_start"]
    )


# Following workloads on the cluster


def _release(workload: Workload, *, now) -> None:
    Placement.objects.filter(workload=workload, ended_at__isnull=True).update(ended_at=now)


def _finish(workload: Workload, *, state: str, reason: str, now, event_data=None) -> None:
    workload.state = state
    workload.status_reason = reason[:500]
    workload.finished_at = now
    workload.save(update_fields=["state", "status_reason", "finished_at"])
    _release(workload, now=now)
    event_record(workload, state.lower(), reason or state, **(event_data or {}))


@transaction.atomic
def workload_finish(*, workload_id, state: str, reason: str) -> Workload | None:
    """Move an unfinished workload to a final state and release its GPUs; None if it had
    already finished (another worker got there first)."""
    workload = Workload.objects.select_for_update().get(pk=workload_id)
    if workload.is_final:
        return None
    _finish(workload, state=state, reason=reason, now=clock.now())
    return workload


def _workload_for_cluster(workload_id) -> Workload:
    return Workload.objects.select_related(
        "project__organization", "tier", "gpu_class", "submitted_by"
    ).get(pk=workload_id)


def _manifests_of(workload: Workload) -> list[dict]:
    nodes = (
        [
            p.node
            for p in workload.placements.select_related("node__pool__gpu_class").filter(
                started_at=workload.admitted_at
            )
        ]
        if workload.admitted_at
        else []
    )
    return workload_manifests(workload_spec(workload, nodes=nodes))


def workload_objects_delete(*, workload_id, backend: ClusterBackend) -> None:
    """Delete the workload's Kubernetes objects (already gone is fine)."""
    workload = _workload_for_cluster(workload_id)
    for manifest in _manifests_of(workload):
        backend.delete(
            api_version=manifest["apiVersion"],
            kind=manifest["kind"],
            name=manifest["metadata"]["name"],
            namespace=manifest["metadata"].get("namespace"),
        )
    Workload.objects.filter(pk=workload.pk).update(objects_deleted_at=clock.now())


def workload_launch(*, workload_id, backend: ClusterBackend) -> Workload:
    """Create an admitted workload's objects, after its preemption victims are gone."""
    workload = _workload_for_cluster(workload_id)
    if workload.state != Workload.State.ADMITTED:
        return workload
    provisioned = ProvisioningRecord.objects.filter(
        project=workload.project, state=ProvisioningRecord.State.READY
    ).exists()
    if not provisioned:
        # The namespace is still being made: the task retries with backoff.
        raise ClusterError(
            f"Namespace {workload.project.namespace} is not provisioned yet.", retryable=True
        )
    for victim in workload.victims.filter(objects_deleted_at__isnull=True):
        workload_objects_delete(workload_id=victim.pk, backend=backend)
    try:
        for manifest in _manifests_of(workload):
            backend.apply(manifest)
    except ClusterError as error:
        if error.retryable:
            raise
        workload_finish(
            workload_id=workload.pk,
            state=Workload.State.FAILED,
            reason=f"The cluster refused it: {error}",
        )
        return workload
    with transaction.atomic():
        Workload.objects.filter(pk=workload.pk, launched_at__isnull=True).update(
            launched_at=clock.now()
        )
        event_record(
            workload, "launched", f"Objects created in namespace {workload.project.namespace}."
        )
    return workload


def workload_teardown(*, workload_id, backend: ClusterBackend) -> None:
    workload_objects_delete(workload_id=workload_id, backend=backend)


def workload_launch_give_up(workload_id, *, reason: str) -> None:
    workload_finish(
        workload_id=workload_id,
        state=Workload.State.FAILED,
        reason=f"Its objects could not be created in the cluster: {reason}",
    )


def workload_teardown_give_up(workload_id, *, reason: str) -> None:
    """Its objects may still be in the cluster: tell the operator (its GPUs are released)."""
    workload = Workload.objects.get(pk=workload_id)
    event_record(workload, "teardown_failed", f"Its objects could not be deleted: {reason}")
    logger.error("Teardown of workload %s failed for good: %s", workload_id, reason)


@transaction.atomic
def _requeue(workload: Workload, *, reason: str) -> None:
    now = clock.now()
    _release(workload, now=now)
    workload.state = Workload.State.PENDING
    workload.admitted_at = workload.launched_at = workload.started_at = None
    workload.gpu_class = None
    workload.status_reason = reason[:500]
    workload.save()
    event_record(workload, "requeued", reason)


def workload_requeue_after_node_loss(*, workload_id, backend: ClusterBackend, reason: str) -> None:
    """A node of the gang is gone: stop the whole gang and queue it again."""
    workload_objects_delete(workload_id=workload_id, backend=backend)
    _requeue(Workload.objects.get(pk=workload_id), reason=f"{reason} The gang was requeued.")


def workload_sync(*, workload_id, backend: ClusterBackend) -> Workload:
    """Read the workload's status from the cluster and move its state along."""
    workload = _workload_for_cluster(workload_id)
    if workload.state not in Workload.ACTIVE_STATES or workload.launched_at is None:
        return workload
    _, kind = workload_primary_object(kind=workload.kind)
    status = backend.workload_status(
        kind=kind,
        name=workload.object_name,
        namespace=workload.project.namespace,
    )
    if status.phase == Phase.RUNNING and workload.state == Workload.State.ADMITTED:
        with transaction.atomic():
            updated = Workload.objects.filter(pk=workload.pk, state=Workload.State.ADMITTED).update(
                state=Workload.State.RUNNING, started_at=clock.now()
            )
            if updated:
                event_record(workload, "running", f"{status.ready_replicas} replica(s) running.")
    elif status.phase == Phase.FAILED and status.reason == "NodeLost":
        # Place nothing more there until the inventory sees the node ready again.
        Node.objects.filter(name__in=status.lost_nodes).update(ready=False)
        workload_requeue_after_node_loss(
            workload_id=workload.pk, backend=backend, reason=status.message
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
        _end_on_cluster(workload_id=workload.pk, state=state, reason=reason, backend=backend)
    workload.refresh_from_db()
    return workload


def workloads_sync(*, backend: ClusterBackend) -> int:
    """Follow every launched workload; the number followed."""
    ids = list(
        Workload.objects.filter(
            state__in=Workload.ACTIVE_STATES, launched_at__isnull=False
        ).values_list("pk", flat=True)
    )
    for workload_id in ids:
        workload_sync(workload_id=workload_id, backend=backend)
    return len(ids)


def _end_on_cluster(*, workload_id, state: str, reason: str, backend: ClusterBackend) -> None:
    """Finish the workload and delete its objects, unless another worker finished it first."""
    if workload_finish(workload_id=workload_id, state=state, reason=reason):
        workload_objects_delete(workload_id=workload_id, backend=backend)


def _idle_rule(workload: Workload, *, utilization: float, now, backend: ClusterBackend) -> None:
    """Warn once a workload's GPUs idle past its tier's warning, stop it past the limit."""
    tier = workload.tier
    if utilization >= IDLE_UTILIZATION:
        Workload.objects.filter(pk=workload.pk).update(idle_since=None, idle_warned_at=None)
        return
    idle_since = workload.idle_since or now
    idle_for = now - idle_since
    if tier.idle_stop_after is not None and idle_for >= tier.idle_stop_after:
        _end_on_cluster(
            workload_id=workload.pk,
            state=Workload.State.CANCELLED,
            reason=f"Stopped: its GPUs were idle for {int(idle_for.total_seconds() // 60)} min.",
            backend=backend,
        )
        return
    fields = {"idle_since": idle_since}
    warn = tier.idle_warn_after is not None and idle_for >= tier.idle_warn_after
    if warn and workload.idle_warned_at is None:
        fields["idle_warned_at"] = now
        stop = f" and will be stopped after {tier.idle_stop_after}" if tier.idle_stop_after else ""
        event_record(workload, "idle_warning", f"Its GPUs have been idle for {idle_for}{stop}.")
    Workload.objects.filter(pk=workload.pk).update(**fields)


def idle_and_runtime_check(*, backend: ClusterBackend) -> None:
    """Stop over-runtime workloads; warn, then stop, workloads idle past their tier's limits."""
    now = clock.now()
    running = Workload.objects.filter(state=Workload.State.RUNNING).select_related(
        "tier", "project"
    )
    for workload in running:
        if workload.expected_end and workload.expected_end <= now:
            _end_on_cluster(
                workload_id=workload.pk,
                state=Workload.State.EXPIRED,
                reason=f"Stopped at its maximum runtime ({workload.max_runtime}).",
                backend=backend,
            )
            continue
        if workload.tier.idle_warn_after is None and workload.tier.idle_stop_after is None:
            continue
        utilization = backend.gpu_utilization(
            namespace=workload.project.namespace, workload=workload.object_name
        )
        if utilization is not None:
            _idle_rule(workload, utilization=utilization, now=now, backend=backend)


# What users and operators do


def workload_cancel(*, caller: Caller, workload: Workload) -> Workload:
    organization = workload.project.organization
    role = caller_role(caller=caller, organization=organization)
    own = workload.submitted_by_id == caller.user.pk
    if not own and not role_allows(role, Action.WORKLOAD_CANCEL_ANY):
        raise PermissionDenied("Only its submitter, an admin or an owner may cancel it.")
    authorize(caller=caller, organization=organization, action=Action.WORKLOAD_VIEW)
    if not caller.can_write:
        raise PermissionDenied("This API token is read-only.")
    return _stop(
        caller=caller,
        workload=workload,
        state=Workload.State.CANCELLED,
        reason=f"Cancelled by {caller.user.email}.",
    )


def _stop(*, caller: Caller, workload: Workload, state: str, reason: str) -> Workload:
    from .tasks import workload_teardown

    with transaction.atomic():
        finished = workload_finish(workload_id=workload.pk, state=state, reason=reason)
        if finished is None:
            raise Conflict(f"The workload is already {workload.state}.", code="workload_finished")
        audit_record(
            caller=caller,
            organization=workload.project.organization,
            action=f"workload.{state.lower()}",
            target=workload,
            payload={"reason": reason},
        )
        if finished.launched_at is not None:
            transaction.on_commit(lambda: workload_teardown.delay(str(workload.pk)))
    workload.refresh_from_db()
    return workload


def workload_stop_by_operator(*, caller: Caller, workload: Workload) -> Workload:
    require_operator(caller)
    return _stop(
        caller=caller,
        workload=workload,
        state=Workload.State.CANCELLED,
        reason=f"Stopped by operator {caller.user.email}.",
    )


def workload_requeue_by_operator(*, caller: Caller, workload: Workload) -> Workload:
    require_operator(caller)
    from .tasks import workload_teardown

    if workload.state not in Workload.ACTIVE_STATES:
        raise ValidationError(
            {"state": f"Only admitted or running workloads requeue, not {workload.state}."}
        )
    launched = workload.launched_at is not None
    _requeue(workload, reason=f"Requeued by operator {caller.user.email}.")
    if launched:
        transaction.on_commit(lambda: workload_teardown.delay(str(workload.pk)))
    return workload


@transaction.atomic
def node_cordon(*, caller: Caller, node: Node, cordoned: bool = True) -> Node:
    require_operator(caller)
    Node.objects.filter(pk=node.pk).update(cordoned=cordoned)
    node.refresh_from_db()
    return node


def node_drain(*, caller: Caller, node: Node) -> list[Workload]:
    """Cordon the node and requeue every workload with a replica on it."""
    node_cordon(caller=caller, node=node)
    drained = list(
        Workload.objects.filter(
            state__in=Workload.ACTIVE_STATES,
            placements__node=node,
            placements__ended_at__isnull=True,
        ).distinct()
    )
    for workload in drained:
        with transaction.atomic():
            workload_requeue_by_operator(caller=caller, workload=workload)
    return drained
