"""Kubernetes objects, as dicts, for what the specs describe.

Pure functions: the same spec always gives the same objects, nothing is read from the database
or the cluster. Both backends pass every object through `checks.manifest_problems` before it
leaves the portal.
"""

import re
from collections.abc import Mapping

from .specs import (
    LABEL_PREFIX,
    MANAGED_BY,
    NodeSpec,
    PoolSpec,
    ProjectSpec,
    TaintSpec,
    TierSpec,
    WorkloadKind,
    WorkloadSpec,
)

ORGANIZATION_LABEL = f"{LABEL_PREFIX}/organization"
PROJECT_LABEL = f"{LABEL_PREFIX}/project"
WORKLOAD_LABEL = f"{LABEL_PREFIX}/workload"
WORKLOAD_ID_LABEL = f"{LABEL_PREFIX}/workload-id"
OWNER_LABEL = f"{LABEL_PREFIX}/owner"
EXPIRES_AT_LABEL = f"{LABEL_PREFIX}/expires-at"
POOL_LABEL = f"{LABEL_PREFIX}/pool"
OWNER_ANNOTATION = f"{LABEL_PREFIX}/owner"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
HOSTNAME_LABEL = "kubernetes.io/hostname"
GPU_TYPE_LABEL = "gpu-type"
POOL_PURPOSE_LABEL = "workload"

WORKLOAD_SERVICE_ACCOUNT = "workloads"
TENANT_ROLE = "tenant-read"
CONTAINER_NAME = "main"
PORT_NAME = "http"
# The portal deletes the objects of finished workloads itself; the TTL only cleans up after a
# portal that was down for long, and leaves a day to read the final status.
FINISHED_JOB_TTL_SECONDS = 86_400
# A single pod may be retried by the Job controller a few times; a gang never is: one lost
# member invalidates the others, so the Job fails at once and the portal requeues it whole.
SINGLE_POD_BACKOFF_LIMIT = 2

JOB_KINDS = frozenset(
    {WorkloadKind.TRAINING, WorkloadKind.FINE_TUNING, WorkloadKind.BATCH_INFERENCE}
)

# The object whose status is the workload's status, per kind.
_PRIMARY_OBJECT = {
    WorkloadKind.TRAINING: ("batch/v1", "Job"),
    WorkloadKind.FINE_TUNING: ("batch/v1", "Job"),
    WorkloadKind.BATCH_INFERENCE: ("batch/v1", "Job"),
    WorkloadKind.INFERENCE: ("apps/v1", "Deployment"),
    WorkloadKind.NOTEBOOK: ("v1", "Pod"),
}

_LABEL_VALUE_INVALID = re.compile(r"[^A-Za-z0-9._-]+")


def workload_primary_object(*, kind: WorkloadKind | str) -> tuple[str, str]:
    """(apiVersion, kind) of the object that carries a workload's status."""
    return _PRIMARY_OBJECT[WorkloadKind(kind)]


def owner_label_value(*, owner: str) -> str:
    """An e-mail address as a label value (63 characters of [A-Za-z0-9._-], alphanumeric at
    both ends); the exact address is kept in an annotation."""
    value = _LABEL_VALUE_INVALID.sub("-", owner.replace("@", "_at_"))[:63]
    return value.strip("._-")


def _managed_labels(*, organization: str, project: str) -> dict[str, str]:
    return {
        ORGANIZATION_LABEL: organization,
        PROJECT_LABEL: project,
        MANAGED_BY_LABEL: MANAGED_BY,
    }


def _metadata(*, name: str, namespace: str | None, labels: Mapping[str, str]) -> dict:
    metadata: dict = {"name": name, "labels": dict(labels)}
    if namespace is not None:
        metadata["namespace"] = namespace
    return metadata


def project_manifests(spec: ProjectSpec) -> list[dict]:
    """Namespace, quota, limits, identity and network isolation of one project, in the order
    they must be applied (the namespace first)."""
    labels = _managed_labels(organization=spec.organization, project=spec.project)

    def namespaced(api_version: str, kind: str, name: str, body: dict) -> dict:
        metadata = _metadata(name=name, namespace=spec.namespace, labels=labels)
        return {"apiVersion": api_version, "kind": kind, "metadata": metadata, **body}

    namespace_labels = {
        **labels,
        # Tenants' pods may not be privileged, use host namespaces or hostPath: baseline keeps
        # GPU images working (the device plugin injects devices) and blocks node takeover.
        "pod-security.kubernetes.io/enforce": "baseline",
    }
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            **_metadata(name=spec.namespace, namespace=None, labels=namespace_labels),
            "annotations": {OWNER_ANNOTATION: spec.owner_email},
        },
    }
    # Extended resources can only be quota'd on requests (Kubernetes has no overcommit for
    # them, so the request always equals the limit).
    hard = {f"requests.{resource}": str(count) for resource, count in spec.gpu_quota.items()}
    hard.setdefault("requests.nvidia.com/gpu", "0")
    hard["pods"] = str(spec.max_pods)
    quota = namespaced("v1", "ResourceQuota", "gpu-quota", {"spec": {"hard": hard}})
    # Defaults make requests equal limits for containers that name neither, so no pod runs in
    # the best-effort class; there are no GPU defaults, GPUs are only ever asked for explicitly.
    defaults = {"cpu": spec.default_cpu, "memory": spec.default_memory}
    limit_range = namespaced(
        "v1",
        "LimitRange",
        "container-limits",
        {
            "spec": {
                "limits": [
                    {
                        "type": "Container",
                        "default": defaults,
                        "defaultRequest": dict(defaults),
                        "max": {"cpu": spec.max_cpu, "memory": spec.max_memory},
                    }
                ]
            }
        },
    )
    service_account = namespaced(
        "v1",
        "ServiceAccount",
        WORKLOAD_SERVICE_ACCOUNT,
        {"automountServiceAccountToken": False},
    )
    # The portal is the only writer of workloads (writing directly would bypass its queue and
    # preemption), so the tenant identity may read status, logs and events, and nothing more.
    role = namespaced(
        "rbac.authorization.k8s.io/v1",
        "Role",
        TENANT_ROLE,
        {
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["pods", "pods/log", "services", "endpoints", "events"],
                    "verbs": ["get", "list", "watch"],
                },
                {
                    "apiGroups": ["apps", "batch"],
                    "resources": ["deployments", "replicasets", "jobs"],
                    "verbs": ["get", "list", "watch"],
                },
            ]
        },
    )
    role_binding = namespaced(
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        TENANT_ROLE,
        {
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": TENANT_ROLE,
            },
            "subjects": [
                {
                    "kind": "ServiceAccount",
                    "name": WORKLOAD_SERVICE_ACCOUNT,
                    "namespace": spec.namespace,
                }
            ],
        },
    )
    # Pods of the namespace talk to each other (gang members, a service and its clients);
    # nothing from another tenant's namespace gets in. Egress stays open (DNS, registries,
    # datasets); other tenants are protected by their own ingress rule.
    network_policy = namespaced(
        "networking.k8s.io/v1",
        "NetworkPolicy",
        "tenant-isolation",
        {
            "spec": {
                "podSelector": {},
                "policyTypes": ["Ingress", "Egress"],
                "ingress": [{"from": [{"podSelector": {}}]}],
                "egress": [{}],
            }
        },
    )
    return [namespace, quota, limit_range, service_account, role, role_binding, network_policy]


def priority_class_manifest(tier: TierSpec) -> dict:
    """The PriorityClass of a tier. Its value orders the kube-scheduler's queue; preemption is
    the portal engine's decision alone (it knows quotas, reservations and gangs), so no pod ever
    preempts another on its own: `preemptionPolicy: Never` on every tier."""
    description = tier.description or f"GPU cloud portal tier {tier.name}"
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": _metadata(
            name=tier.name, namespace=None, labels={MANAGED_BY_LABEL: MANAGED_BY}
        ),
        "value": tier.value,
        "globalDefault": False,
        "preemptionPolicy": "Never",
        "description": description,
    }


def node_labels(spec: NodeSpec) -> tuple[dict[str, str], tuple[TaintSpec, ...]]:
    """The labels and taints a node of its pool carries; topology keys are taken as given."""
    labels = {
        **spec.pool.labels,
        **spec.topology,
        POOL_PURPOSE_LABEL: spec.pool.purpose,
        POOL_LABEL: spec.pool.name,
    }
    if spec.pool.gpu_class:  # a CPU pool's nodes have no GPU type
        labels[GPU_TYPE_LABEL] = spec.pool.gpu_class
    taints = (spec.pool.taint,) if spec.pool.taint else ()
    return labels, taints


def _toleration(taint: TaintSpec) -> dict:
    if taint.value:
        return {"key": taint.key, "operator": "Equal", "value": taint.value, "effect": taint.effect}
    return {"key": taint.key, "operator": "Exists", "effect": taint.effect}


def _pod_labels(spec: WorkloadSpec) -> dict[str, str]:
    labels = {
        **_managed_labels(organization=spec.organization, project=spec.project),
        WORKLOAD_LABEL: spec.name,
        WORKLOAD_ID_LABEL: spec.id,
        OWNER_LABEL: owner_label_value(owner=spec.owner),
    }
    if spec.expires_at is not None:
        labels[EXPIRES_AT_LABEL] = str(int(spec.expires_at.timestamp()))
    return labels


def _affinity(spec: WorkloadSpec) -> dict:
    affinity: dict = {}
    if spec.nodes:
        affinity["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": HOSTNAME_LABEL, "operator": "In", "values": list(spec.nodes)}
                        ]
                    }
                ]
            }
        }
    if spec.kind == WorkloadKind.INFERENCE:
        # One replica per node: a node failure takes down at most one replica.
        affinity["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {WORKLOAD_LABEL: spec.name}},
                    "topologyKey": HOSTNAME_LABEL,
                }
            ]
        }
    return affinity


def _container(spec: WorkloadSpec) -> dict:
    requests = {"cpu": spec.cpu, "memory": spec.memory}
    limits = dict(requests)
    # Extended resources go in limits only: Kubernetes sets the request equal to it.
    if spec.gpu_resource and spec.gpu_count > 0:
        limits[spec.gpu_resource] = str(spec.gpu_count)
    container: dict = {
        "name": CONTAINER_NAME,
        "image": spec.image,
        "resources": {"requests": requests, "limits": limits},
    }
    if spec.command:
        container["command"] = list(spec.command)
    if spec.env:
        container["env"] = [{"name": name, "value": value} for name, value in spec.env.items()]
    if spec.kind == WorkloadKind.INFERENCE:
        container["ports"] = [{"name": PORT_NAME, "containerPort": spec.port}]
        container["readinessProbe"] = {"tcpSocket": {"port": PORT_NAME}, "periodSeconds": 10}
    return container


def _pool_placement(pool: PoolSpec | None) -> dict:
    # Without a pool (CPU-only work) there is no toleration, so GPU nodes' taints keep it off.
    if pool is None:
        return {}
    placement: dict = {"nodeSelector": {POOL_LABEL: pool.name}}
    if pool.taint is not None:
        placement["tolerations"] = [_toleration(pool.taint)]
    return placement


def _pod_spec(spec: WorkloadSpec, *, restart_policy: str) -> dict:
    pod_spec: dict = {
        "serviceAccountName": WORKLOAD_SERVICE_ACCOUNT,
        "automountServiceAccountToken": False,
        "priorityClassName": spec.tier,
        "restartPolicy": restart_policy,
        "containers": [_container(spec)],
        **_pool_placement(spec.pool),
    }
    if spec.notice_seconds is not None:
        pod_spec["terminationGracePeriodSeconds"] = spec.notice_seconds
    affinity = _affinity(spec)
    if affinity:
        pod_spec["affinity"] = affinity
    return pod_spec


def _service(spec: WorkloadSpec, *, headless: bool) -> dict:
    port = {"name": PORT_NAME, "port": spec.port, "targetPort": spec.port, "protocol": "TCP"}
    service_spec: dict = {
        "type": "ClusterIP",
        "selector": {WORKLOAD_LABEL: spec.name},
        "ports": [port],
    }
    if headless:
        # Gang members find each other as <job>-<index>.<job>; they must resolve before they
        # are ready, since a rendezvous waits for all of them.
        service_spec["clusterIP"] = "None"
        service_spec["publishNotReadyAddresses"] = True
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(name=spec.name, namespace=spec.namespace, labels=_pod_labels(spec)),
        "spec": service_spec,
    }


def _job(spec: WorkloadSpec) -> dict:
    labels = _pod_labels(spec)
    pod_spec = _pod_spec(spec, restart_policy="Never")
    if spec.replicas > 1:
        pod_spec["subdomain"] = spec.name
    job_spec: dict = {
        "completionMode": "Indexed",
        "completions": spec.replicas,
        "parallelism": spec.replicas,
        "backoffLimit": 0 if spec.replicas > 1 else SINGLE_POD_BACKOFF_LIMIT,
        "ttlSecondsAfterFinished": FINISHED_JOB_TTL_SECONDS,
        "template": {"metadata": {"labels": labels}, "spec": pod_spec},
    }
    if spec.max_runtime_seconds is not None:
        job_spec["activeDeadlineSeconds"] = spec.max_runtime_seconds
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _metadata(name=spec.name, namespace=spec.namespace, labels=labels),
        "spec": job_spec,
    }


def _deployment(spec: WorkloadSpec) -> dict:
    labels = _pod_labels(spec)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(name=spec.name, namespace=spec.namespace, labels=labels),
        "spec": {
            "replicas": spec.replicas,
            "selector": {"matchLabels": {WORKLOAD_LABEL: spec.name}},
            # The replicas are pinned to the engine's nodes, one per node: a rolling update
            # would need a spare node for the surge pod, so old pods go before new ones start.
            "strategy": {"type": "Recreate"},
            "template": {
                "metadata": {"labels": labels},
                "spec": _pod_spec(spec, restart_policy="Always"),
            },
        },
    }


def _notebook_pod(spec: WorkloadSpec) -> dict:
    # OnFailure: a crashed notebook comes back; one the user shuts down ends and frees its GPUs.
    pod_spec = _pod_spec(spec, restart_policy="OnFailure")
    if spec.max_runtime_seconds is not None:
        pod_spec["activeDeadlineSeconds"] = spec.max_runtime_seconds
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _metadata(name=spec.name, namespace=spec.namespace, labels=_pod_labels(spec)),
        "spec": pod_spec,
    }


def workload_manifests(spec: WorkloadSpec) -> list[dict]:
    """The objects of one admitted workload, its status-carrying object first."""
    if spec.kind in JOB_KINDS:
        job = _job(spec)
        return [job, _service(spec, headless=True)] if spec.replicas > 1 else [job]
    if spec.kind == WorkloadKind.INFERENCE:
        return [_deployment(spec), _service(spec, headless=False)]
    return [_notebook_pod(spec)]
