"""The real cluster, through the official Kubernetes client.

Every call goes through one retrying request: 429, 5xx, timeouts and broken connections are
retried with exponential backoff and full jitter (honouring Retry-After); anything else the API
server refuses is reported at once. Objects are applied create-first: an AlreadyExists answer
means read the live object and bring what the portal owns back to the manifest.
"""

import copy
import json
import logging
import os
import random
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any, Protocol

import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from .base import ClusterError
from .checks import manifest_problems
from .kubernetes_logs import PodLogs
from .kubernetes_merge import annotation_set, contains, merged, owned, taint_id
from .kubernetes_status import STATUS_READERS, node_inventory, workload_status_of
from .manifests import WORKLOAD_LABEL, workload_primary_object
from .specs import (
    LABEL_PREFIX,
    GpuReading,
    NodeInventory,
    TaintSpec,
    WorkloadKind,
    WorkloadStatus,
)

logger = logging.getLogger(__name__)

# kind -> (plural, namespaced): the objects the portal sends or reads.
_RESOURCES = {
    "Namespace": ("namespaces", False),
    "Node": ("nodes", False),
    "PriorityClass": ("priorityclasses", False),
    "ResourceQuota": ("resourcequotas", True),
    "LimitRange": ("limitranges", True),
    "ServiceAccount": ("serviceaccounts", True),
    "Role": ("roles", True),
    "RoleBinding": ("rolebindings", True),
    "NetworkPolicy": ("networkpolicies", True),
    "Service": ("services", True),
    "Pod": ("pods", True),
    "Job": ("jobs", True),
    "Deployment": ("deployments", True),
}
# Every request the backend makes, as RBAC names it: (API group, resource, verb). `apply`
# creates, and reads then updates what already exists; `delete` deletes (priority classes are
# never deleted); nodes are listed, read and patched (labels, taints); `workload_statuses` lists
# pods, Jobs and Deployments; `logs` lists pods and reads their logs. The ClusterRole of
# deploy/kubernetes/ grants exactly these, plus the rules of the tenant Role the portal creates
# in each namespace (Kubernetes lets nobody grant what it does not hold); tests/deploy records
# every request of every backend call and checks both.
_APPLIED = {
    "": ("namespaces", "resourcequotas", "limitranges", "serviceaccounts", "services", "pods"),
    "rbac.authorization.k8s.io": ("roles", "rolebindings"),
    "networking.k8s.io": ("networkpolicies",),
    "scheduling.k8s.io": ("priorityclasses",),
    "batch": ("jobs",),
    "apps": ("deployments",),
}
API_PERMISSIONS: frozenset[tuple[str, str, str]] = frozenset(
    {
        *(
            (group, resource, verb)
            for group, resources in _APPLIED.items()
            for resource in resources
            for verb in ("create", "get", "update", "delete")
            if (resource, verb) != ("priorityclasses", "delete")
        ),
        ("", "nodes", "get"),
        ("", "nodes", "list"),
        ("", "nodes", "patch"),
        ("", "pods", "list"),
        ("", "pods/log", "get"),
        ("batch", "jobs", "list"),
        ("apps", "deployments", "list"),
    }
)
_WORKLOAD_API_VERSIONS = {
    kind: api_version
    for api_version, kind in (workload_primary_object(kind=kind) for kind in WorkloadKind)
}
# Kubernetes refuses changes to these kinds' spec (a Job's template and selector, a Pod's
# containers): a different spec cannot be reconciled, only replaced by delete and create.
_IMMUTABLE_SPEC_KINDS = frozenset({"Job", "Pod"})
_CONFLICT_ATTEMPTS = 3
_LIST_PAGE_SIZE = 500
MANAGED_LABELS_ANNOTATION = f"{LABEL_PREFIX}/managed-labels"
MANAGED_TAINTS_ANNOTATION = f"{LABEL_PREFIX}/managed-taints"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


class _Refused(ClusterError):
    """The API server answered with a final error; `reason` is its Status reason."""

    def __init__(self, message: str, *, status: int, reason: str):
        super().__init__(message, status=status)
        self.reason = reason


def _is_retryable(status: int) -> bool:
    return status == 429 or 500 <= status <= 599


def _server_message(error: ApiException) -> tuple[str, str]:
    """The Status message and reason of an error answer, when the body is a Status."""
    try:
        status = json.loads(error.body or "")
    except (TypeError, ValueError):
        return (error.reason or f"HTTP {error.status}"), ""
    if not isinstance(status, dict):
        return (error.reason or f"HTTP {error.status}"), ""
    return status.get("message") or error.reason or "", status.get("reason") or ""


def _retry_after_seconds(error: ApiException) -> float | None:
    value = (error.headers or {}).get("Retry-After")
    try:
        return max(float(value), 0.0) if value is not None else None
    except ValueError:  # an HTTP date: fall back to our own backoff
        return None


def _api_prefix(api_version: str) -> str:
    return f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"


def resource_path(*, api_version: str, kind: str, namespace: str | None, name: str = "") -> str:
    """The REST path of a collection (no name) or of one object."""
    if kind not in _RESOURCES:
        raise ClusterError(f"The portal does not manage {kind} objects.")
    plural, namespaced = _RESOURCES[kind]
    if namespaced and not namespace:
        raise ClusterError(f"{kind} {name} needs a namespace.")
    path = _api_prefix(api_version)
    if namespaced:
        path += f"/namespaces/{namespace}"
    path += f"/{plural}"
    return f"{path}/{name}" if name else path


class GpuMetrics(Protocol):
    """Instant queries to the Prometheus that scrapes the DCGM exporter."""

    def samples(self, query: str) -> list[tuple[dict[str, str], float]] | None:
        """Every sample as (labels, value); None when the query failed (unknown, not empty)."""
        ...


def workload_of_pod(pod: str, workloads: Collection[str]) -> str | None:
    """The workload a pod belongs to: a notebook's Pod is named as its workload, a Job's or
    Deployment's pods are <workload>-<suffix>; the longest name that fits wins ("train-2-x" is
    train-2's, not train's)."""
    names = set(workloads)
    candidates = [pod, *(pod[:i] for i in range(len(pod) - 1, 0, -1) if pod[i] == "-")]
    return next((name for name in candidates if name in names), None)


class KubernetesBackend(PodLogs):
    """`ClusterBackend` over the Kubernetes API."""

    def __init__(
        self,
        *,
        api_client: client.ApiClient,
        metrics: GpuMetrics | None = None,
        request_timeout: tuple[float, float] = (5.0, 30.0),
        max_attempts: int = 5,
        base_delay: float = 0.5,
        max_delay: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.api_client = api_client
        self.metrics = metrics  # None: no monitoring, every GPU reading unknown
        self.request_timeout = request_timeout  # (connect, read) seconds, on every call
        self.max_attempts = max_attempts
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.sleep = sleep
        self.rng = rng or random.Random()

    @classmethod
    def from_configuration(
        cls, *, configuration: client.Configuration, **options: Any
    ) -> "KubernetesBackend":
        """A backend for a client configuration. urllib3's own retries are switched off: the
        backend retries, with backoff, and counts every attempt."""
        configuration = copy.copy(configuration)
        configuration.retries = False
        return cls(api_client=client.ApiClient(configuration), **options)

    @classmethod
    def from_environment(
        cls, *, config_file: str | None = None, **options: Any
    ) -> "KubernetesBackend":
        """The kubeconfig file given; else, in a pod, the service account's in-cluster config;
        elsewhere KUBECONFIG (or ~/.kube/config)."""
        configuration = client.Configuration()
        if config_file is not None:
            config.load_kube_config(config_file=config_file, client_configuration=configuration)
        elif os.environ.get("KUBERNETES_SERVICE_HOST"):
            config.load_incluster_config(client_configuration=configuration)
        else:
            config.load_kube_config(
                config_file=os.environ.get("KUBECONFIG", "~/.kube/config"),
                client_configuration=configuration,
            )
        return cls.from_configuration(configuration=configuration, **options)

    # --- one request, retried -------------------------------------------------------------

    def _backoff(self, *, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_delay)
        # Full jitter: many workers retrying after one outage do not come back in step.
        return self.rng.uniform(0, min(self.max_delay, self.base_delay * 2 ** (attempt - 1)))

    def _request(self, method: str, path: str, **options: Any) -> dict:
        """The JSON answer to a request (options: those of `_response`)."""
        return json.loads(self._response(method, path, **options).data or b"{}")

    def _response(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> urllib3.BaseHTTPResponse:
        """The answer to a request, its body not read yet (a log can be a stream)."""
        failure = ""
        last_status: int | None = None
        for attempt in range(1, self.max_attempts + 1):
            retry_after = None
            try:
                response = self.api_client.call_api(
                    path,
                    method,
                    query_params=query or [],
                    header_params={"Accept": "application/json", "Content-Type": content_type},
                    body=body,
                    auth_settings=["BearerToken"],
                    # Plain dicts, as sent: no generated model drops a field it does not know.
                    _preload_content=False,
                    _request_timeout=self.request_timeout,
                )
                return response
            except ApiException as error:
                message, reason = _server_message(error)
                if not _is_retryable(error.status):
                    raise _Refused(
                        f"{method} {path}: {message}", status=error.status, reason=reason
                    ) from error
                failure, last_status = f"HTTP {error.status} {message}", error.status
                retry_after = _retry_after_seconds(error)
            except urllib3.exceptions.HTTPError as error:  # timeouts, refused or reset
                failure, last_status = f"{type(error).__name__}: {error}", None
            if attempt < self.max_attempts:
                logger.info("%s %s failed (%s); retrying", method, path, failure)
                self.sleep(self._backoff(attempt=attempt, retry_after=retry_after))
        raise ClusterError(
            f"{method} {path} failed {self.max_attempts} times, last: {failure}",
            status=last_status,
            retryable=True,
        )

    def _list(self, path: str, *, label_selector: str | None = None) -> list[dict]:
        """Every object of a collection (that matches the selector), page by page."""
        selector = [("labelSelector", label_selector)] if label_selector else []
        items: list[dict] = []
        query = [*selector, ("limit", str(_LIST_PAGE_SIZE))]
        while True:
            page = self._request("GET", path, query=query)
            items += page.get("items") or []
            next_page = (page.get("metadata") or {}).get("continue")
            if not next_page:
                return items
            query = [*selector, ("limit", str(_LIST_PAGE_SIZE)), ("continue", next_page)]

    # --- the protocol ---------------------------------------------------------------------

    def list_nodes(self) -> list[NodeInventory]:
        return [node_inventory(node) for node in self._list("/api/v1/nodes")]

    def apply(self, manifest: dict) -> dict:
        problems = manifest_problems(manifest)
        if problems:
            raise ClusterError("; ".join(problems), status=422)
        api_version, kind = manifest["apiVersion"], manifest["kind"]
        metadata = manifest["metadata"]
        namespace = metadata.get("namespace")
        collection = resource_path(api_version=api_version, kind=kind, namespace=namespace)
        try:
            return self._request("POST", collection, body=manifest)
        except _Refused as error:
            if error.status != 409 or error.reason != "AlreadyExists":
                raise
        path = resource_path(
            api_version=api_version, kind=kind, namespace=namespace, name=metadata["name"]
        )
        return self._reconcile(manifest, path=path)

    def _reconcile(self, manifest: dict, *, path: str) -> dict:
        ours = owned(manifest)
        kind, name = manifest["kind"], manifest["metadata"]["name"]
        for _ in range(_CONFLICT_ATTEMPTS):
            live = self._request("GET", path)
            if live["metadata"].get("deletionTimestamp"):
                raise ClusterError(
                    f"{kind} {name} is still being deleted; it is created again on a later try.",
                    status=409,
                    retryable=True,
                )
            if contains(live, ours):
                return live
            if kind in _IMMUTABLE_SPEC_KINDS and not contains(live.get("spec"), ours.get("spec")):
                raise ClusterError(
                    f"{kind} {name} already exists with a different spec, which Kubernetes "
                    "does not allow to change: delete it, then apply again.",
                    status=409,
                )
            desired = merged(live, ours)
            desired["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
            try:
                return self._request("PUT", path, body=desired)
            except _Refused as error:
                if error.status != 409:  # 409 here: changed since read; read again
                    raise
        raise ClusterError(
            f"{kind} {name} kept changing while being updated.", status=409, retryable=True
        )

    def delete(self, *, api_version: str, kind: str, name: str, namespace: str | None) -> None:
        path = resource_path(api_version=api_version, kind=kind, namespace=namespace, name=name)
        # Background: the call returns at once and the garbage collector removes the pods.
        options = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
        try:
            self._request("DELETE", path, body=options)
        except _Refused as error:
            if error.status != 404:
                raise

    def label_node(
        self, *, name: str, labels: dict[str, str], taints: tuple[TaintSpec, ...]
    ) -> None:
        """Set the portal's labels and taints, removing those it set before and no longer
        wants (remembered in annotations); other labels and taints on the node are kept."""
        wanted_taints = [taint.as_dict() for taint in taints]
        problems = manifest_problems(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": labels},
                "spec": {"taints": wanted_taints},
            }
        )
        if problems:
            raise ClusterError("; ".join(problems), status=422)
        path = resource_path(api_version="v1", kind="Node", namespace=None, name=name)
        for _ in range(_CONFLICT_ATTEMPTS):
            patch = self._node_patch(
                self._request("GET", path), labels=labels, taints=wanted_taints
            )
            if patch is None:
                return
            try:
                self._request("PATCH", path, body=patch, content_type=STRATEGIC_MERGE_PATCH)
                return
            except _Refused as error:
                if error.status != 409:
                    raise
        raise ClusterError(f"Node {name} kept changing while being labeled.", retryable=True)

    @staticmethod
    def _node_patch(node: Mapping, *, labels: dict[str, str], taints: list[dict]) -> dict | None:
        metadata = node["metadata"]
        live_labels = metadata.get("labels") or {}
        annotations = metadata.get("annotations") or {}
        stale_labels = annotation_set(annotations, MANAGED_LABELS_ANNOTATION) - labels.keys()
        label_changes: dict[str, str | None] = {
            key: value for key, value in labels.items() if live_labels.get(key) != value
        }
        # null deletes a key in a merge patch
        label_changes.update({key: None for key in stale_labels if key in live_labels})
        ours = {taint_id(taint) for taint in taints}
        replaced = ours | annotation_set(annotations, MANAGED_TAINTS_ANNOTATION)
        live_taints = (node.get("spec") or {}).get("taints") or []
        # Node taints have no merge key: the list is sent whole, others' taints included.
        new_taints = [t for t in live_taints if taint_id(t) not in replaced] + taints
        managed = {
            MANAGED_LABELS_ANNOTATION: ",".join(sorted(labels)),
            MANAGED_TAINTS_ANNOTATION: ",".join(sorted(ours)),
        }
        annotation_changes = {
            key: value for key, value in managed.items() if annotations.get(key) != value
        }
        taints_change = not contains(live_taints, new_taints)
        if not (label_changes or annotation_changes or taints_change):
            return None
        patch: dict = {"metadata": {"resourceVersion": metadata["resourceVersion"]}}
        if label_changes:
            patch["metadata"]["labels"] = label_changes
        if annotation_changes:
            patch["metadata"]["annotations"] = annotation_changes
        if taints_change:
            patch["spec"] = {"taints": new_taints}
        return patch

    def workload_statuses(
        self, *, namespace: str, workloads: Mapping[str, str]
    ) -> dict[str, WorkloadStatus]:
        """The status of each named workload (name -> kind of its status-carrying object),
        from one listing of the pods and one per other kind, however many workloads the
        namespace runs."""
        unknown = set(workloads.values()) - STATUS_READERS.keys()
        if unknown:
            raise ClusterError(f"{', '.join(sorted(unknown))} is not a workload kind.")
        # A selector of the label's key alone: every object of the portal's workloads.
        pods = self._list(
            resource_path(api_version="v1", kind="Pod", namespace=namespace),
            label_selector=WORKLOAD_LABEL,
        )
        objects = {("Pod", pod["metadata"]["name"]): pod for pod in pods}
        for kind in sorted(set(workloads.values()) - {"Pod"}):
            path = resource_path(
                api_version=_WORKLOAD_API_VERSIONS[kind], kind=kind, namespace=namespace
            )
            for item in self._list(path, label_selector=WORKLOAD_LABEL):
                objects[kind, item["metadata"]["name"]] = item
        pods_of: dict[str, list[dict]] = {}
        for pod in pods:
            pods_of.setdefault(pod["metadata"]["labels"][WORKLOAD_LABEL], []).append(pod)
        return {
            name: workload_status_of(kind, objects.get((kind, name)), pods_of.get(name, []))
            for name, kind in workloads.items()
        }

    def gpu_readings(
        self, *, workloads: Mapping[str, Collection[str]]
    ) -> dict[tuple[str, str], GpuReading]:
        """From DCGM exporter metrics in Prometheus, per pod: three queries however many
        workloads (utilization, framebuffer used, framebuffer free), a fourth (graphics engine
        activity) where the first finds nothing. They ask for every GPU that a pod holds (at
        most the cluster's GPUs, not a list of namespaces that could outgrow a URL) and keep
        the pods of the workloads asked. A workload whose pods monitoring does not see is
        absent: unknown, never 0, for idle detection must not stop work it cannot see."""
        if self.metrics is None or not workloads:
            return {}
        scope = 'pod!=""'
        per_pod = "by (namespace, pod)"
        utilization = self._per_pod(f"avg {per_pod} (DCGM_FI_DEV_GPU_UTIL{{{scope}}})", 100.0)
        if not utilization:
            engine = f"avg {per_pod} (DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{scope}}})"
            utilization = self._per_pod(engine, 1.0)
        used = self._per_pod(f"sum {per_pod} (DCGM_FI_DEV_FB_USED{{{scope}}})")
        free = self._per_pod(f"sum {per_pod} (DCGM_FI_DEV_FB_FREE{{{scope}}})")
        busy: dict[tuple[str, str], list[float]] = {}
        memory: dict[tuple[str, str], list[float]] = {}
        for (namespace, pod), value in utilization.items():
            if (workload := workload_of_pod(pod, workloads.get(namespace, ()))) is not None:
                busy.setdefault((namespace, workload), []).append(min(max(value, 0.0), 1.0))
        for (namespace, pod), value in used.items():
            workload = workload_of_pod(pod, workloads.get(namespace, ()))
            if workload is not None and (namespace, pod) in free:
                held = memory.setdefault((namespace, workload), [0.0, 0.0])
                held[0] += value
                held[1] += value + free[(namespace, pod)]
        return {
            key: GpuReading(
                utilization=sum(busy[key]) / len(busy[key]) if key in busy else None,
                memory_used=(
                    min(memory[key][0] / memory[key][1], 1.0)
                    if key in memory and memory[key][1] > 0
                    else None
                ),
            )
            for key in busy.keys() | memory.keys()
        }

    def _per_pod(self, query: str, scale: float = 1.0) -> dict[tuple[str, str], float]:
        """An instant query's samples by (namespace, pod), divided by ``scale``; empty when
        Prometheus failed."""
        samples = self.metrics.samples(query) or []
        return {
            (labels["namespace"], labels["pod"]): value / scale
            for labels, value in samples
            if "namespace" in labels and "pod" in labels
        }
