"""Provisioning: what each cluster must hold for the portal (priority classes, node labels and
taints) and for each project (namespace, quota, limits, role binding, network policy), in
every cluster its organization may use (`selectors.organization_clusters`), each cluster's
outcome on a record of its own. Re-running changes nothing; a retryable failure is raised for
the task to retry."""

from portal import clock
from portal.events import Event, publish
from tenants.models import Organization, Project
from tenants.permissions import Caller, require_operator

from .. import metrics
from ..cluster import ClusterBackend, ClusterError, manifests_delete
from ..cluster.manifests import (
    node_labels,
    priority_class_manifest,
    project_manifests,
)
from ..models import (
    Cluster,
    Node,
    PriorityTier,
    ProvisioningRecord,
    Workload,
)
from ..selectors.cluster import cluster_named
from ..selectors.provisioning import organization_may_use
from ..specs_from_models import (
    node_spec,
    project_spec,
    tier_spec,
)
from .clusters import workloads_in
from .lifecycle import workload_end, workload_objects_delete


def _provisioning_record(project: Project | None, cluster: Cluster | None) -> ProvisioningRecord:
    """The record of the project (None: the cluster-wide objects) in the cluster (None: the
    settings' backend)."""
    record, _ = ProvisioningRecord.objects.select_related("cluster").get_or_create(
        project=project, cluster=cluster, defaults={"scope": "project" if project else "cluster"}
    )
    return record


def _cluster_label(record: ProvisioningRecord) -> str:
    return record.cluster.name if record.cluster_id else ""


def _provisioning_result(record: ProvisioningRecord, *, error: ClusterError | None, done: str):
    record.attempts += 1
    if error is not None:
        outcome = "retryable" if error.retryable else "permanent"
        metrics.PROVISIONING_FAILURES.labels(
            scope=record.scope, cluster=_cluster_label(record), outcome=outcome
        ).inc()
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


def _give_up(record: ProvisioningRecord, *, reason: str) -> ProvisioningRecord:
    metrics.PROVISIONING_FAILURES.labels(
        scope=record.scope, cluster=_cluster_label(record), outcome="gave_up"
    ).inc()
    record.state = ProvisioningRecord.State.FAILED
    where = f" in cluster {record.cluster.name}" if record.cluster_id else ""
    record.error = f"Gave up after retries{where}: {reason}"
    record.save(update_fields=["state", "error", "updated_at"])
    return record


def provisioning_give_up(project_id, cluster: str | None = None, *, reason: str):
    """A project's provisioning (or deprovisioning) in the named cluster kept failing: record
    why on that cluster's record, for the project's users and for operators. None when the
    project no longer exists."""
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return None
    return _give_up(_provisioning_record(project, cluster_named(cluster or "")), reason=reason)


def cluster_provisioning_give_up(cluster: str | None = None, *, reason: str) -> ProvisioningRecord:
    """The cluster-wide provisioning of the named cluster kept failing: record why."""
    return _give_up(_provisioning_record(None, cluster_named(cluster or "")), reason=reason)


def provisioning_rerun(*, caller: Caller, record: ProvisioningRecord) -> None:
    """An operator has one record's provisioning run again by the worker, in its cluster (a
    record of no cluster: in every cluster): a deleted project's is removed again."""
    require_operator(caller)
    where = {"cluster": record.cluster.name} if record.cluster_id else {}
    if record.project_id is None:
        publish(Event.CLUSTER_CHANGED, **where)
    elif record.project.deleted_at is not None:
        publish(Event.PROJECT_DELETED, project_id=str(record.project_id), **where)
    else:
        publish(Event.PROJECT_CHANGED, project_id=str(record.project_id), **where)


def _apply_all(backend: ClusterBackend, manifests: list[dict]) -> ClusterError | None:
    try:
        for manifest in manifests:
            backend.apply(manifest)
    except ClusterError as error:
        return error
    return None


def project_provision(
    *, project_id, backend: ClusterBackend, cluster: Cluster | None = None
) -> ProvisioningRecord | None:
    """Ensure the project's namespace, quota, limits, service account, role binding and
    network policy in the cluster (None: wherever the settings' backend reaches), if its
    organization may use the cluster or the cluster already holds it. Re-running changes
    nothing; a retryable failure is raised for a retry. The cluster's record; None when there
    is nothing to do (the project is deleted, or its organization may not use the cluster)."""
    project = Project.objects.select_related("organization").get(pk=project_id)
    held = ProvisioningRecord.objects.filter(project=project, cluster=cluster).exclude(
        state=ProvisioningRecord.State.REMOVED
    )
    if project.deleted_at is not None:
        return held.first()
    if (
        cluster is not None
        and not organization_may_use(organization_id=project.organization_id, cluster=cluster)
        and not held.exists()
    ):
        return None
    record = _provisioning_record(project, cluster)
    spec = project_spec(project, region=cluster.region if cluster else None)
    error = _apply_all(backend, project_manifests(spec))
    _provisioning_result(record, error=error, done=ProvisioningRecord.State.READY)
    return record


def project_deprovision(
    *, project_id, backend: ClusterBackend, cluster: Cluster | None = None
) -> ProvisioningRecord:
    """Stop the project's workloads (those placed in the cluster, and those never placed;
    None: all of them), then remove its objects from the cluster. The cluster's record."""
    project = Project.objects.select_related("organization").get(pk=project_id)
    ended = Workload.objects.filter(project=project).exclude(state__in=Workload.FINAL_STATES)
    if cluster is not None:
        placed_here = workloads_in(ended, cluster, active=False)
        ended = ended.filter(placements__isnull=True) | placed_here
    for workload in ended.distinct():
        workload_end(
            workload_id=workload.pk,
            state=Workload.State.CANCELLED,
            reason="Its project was deleted.",
            backend=backend,
        )
    undeleted = Workload.objects.filter(project=project, objects_deleted_at__isnull=True)
    for workload in workloads_in(undeleted, cluster, active=False):
        workload_objects_delete(workload_id=workload.pk, backend=backend)
    record = _provisioning_record(project, cluster)
    error = None
    try:
        manifests_delete(backend, list(reversed(project_manifests(project_spec(project)))))
    except ClusterError as failure:
        error = failure
    _provisioning_result(record, error=error, done=ProvisioningRecord.State.REMOVED)
    return record


def cluster_provision(
    *, backend: ClusterBackend, cluster: Cluster | None = None
) -> ProvisioningRecord:
    """Priority classes for the tiers; labels and taints of every node of the cluster's pools
    (None: of every pool). The cluster's cluster-wide record."""
    record = _provisioning_record(None, cluster)
    error = _apply_all(
        backend, [priority_class_manifest(tier_spec(tier)) for tier in PriorityTier.objects.all()]
    )
    nodes = Node.objects.select_related("pool__gpu_class")
    if cluster is not None:
        nodes = nodes.filter(pool__cluster=cluster)
    if error is None:
        try:
            for node in nodes:
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
                "spec": {"taints": [taint.as_dict() for taint in taints]},
            }
        )
    projects = Project.objects.filter(deleted_at__isnull=True).select_related("organization")
    if organization is not None:
        projects = projects.filter(organization=organization)
    for project in projects.order_by("namespace"):
        manifests.extend(project_manifests(project_spec(project)))
    return manifests
