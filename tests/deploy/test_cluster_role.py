"""The portal's ClusterRole grants exactly what the Kubernetes backend asks of the API server,
plus what the tenant Role it creates grants (Kubernetes lets nobody grant what it lacks).

Every backend call is made against a recording API client; each request becomes the (API group,
resource, verb) RBAC checks. A new request the constant does not list, or a listed one the
backend no longer makes, fails here, as does a ClusterRole that drifts from either."""

import json

import pytest
from kubernetes.client.exceptions import ApiException

from scheduling.cluster.base import manifests_delete
from scheduling.cluster.kubernetes import API_PERMISSIONS, KubernetesBackend
from scheduling.cluster.manifests import (
    TENANT_ROLE,
    node_labels,
    priority_class_manifest,
    project_manifests,
    workload_manifests,
)
from tests.k8s.examples import NODES, PROJECTS, TIERS, WORKLOADS

from .conftest import objects_of

VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def permission_of(method: str, path: str) -> tuple[str, str, str]:
    """(group, resource, verb) of one REST request, as the API server's RBAC sees it."""
    parts = path.strip("/").split("/")
    group, rest = ("", parts[2:]) if parts[0] == "api" else (parts[1], parts[3:])
    if rest[0] == "namespaces" and len(rest) > 2:
        rest = rest[2:]  # a namespaced collection or object
    resource, named = rest[0], len(rest) > 1
    if len(rest) > 2:
        resource = f"{resource}/{rest[2]}"  # a subresource: pods/log
    verb = VERBS.get(method) or ("get" if named else "list")
    return group, resource, verb


class _Response:
    def __init__(self, body: dict):
        self.data = json.dumps(body).encode()

    def read1(self, _amount: int) -> bytes:
        data, self.data = self.data, b""
        return data

    def release_conn(self) -> None:
        pass


class RecordingApiClient:
    """Answers like an API server where every object already exists with its spec but without
    the portal's labels: `apply` then goes through create, read and update; a node needs a
    patch."""

    def __init__(self):
        self.requests: set[tuple[str, str, str]] = set()
        self.sent: dict[str, dict] = {}
        self.pods: list[dict] = []  # what a listing of pods answers

    def call_api(self, path, method, *, body=None, **_options):
        self.requests.add(permission_of(method, path))
        if method == "POST":
            self.sent[f"{path}/{body['metadata']['name']}"] = body
            error = ApiException(status=409, reason="Conflict")
            error.body = json.dumps({"kind": "Status", "reason": "AlreadyExists", "code": 409})
            raise error
        if method == "GET" and permission_of(method, path)[2] == "list":
            return _Response({"items": self.pods if path.endswith("/pods") else [], "metadata": {}})
        if method == "GET":
            live = {k: v for k, v in self.sent.get(path, {}).items() if k != "metadata"}
            name = path.rsplit("/", 1)[1]
            return _Response({**live, "metadata": {"name": name, "resourceVersion": "1"}})
        return _Response(body or {})


def requests_of_every_backend_call() -> set[tuple[str, str, str]]:
    api = RecordingApiClient()
    backend = KubernetesBackend(api_client=api, max_attempts=1, sleep=lambda _: None)
    backend.list_nodes()
    for node in NODES:
        labels, taints = node_labels(node)
        backend.label_node(name=node.name, labels=labels, taints=taints)
    for tier in TIERS:
        backend.apply(priority_class_manifest(tier))
    for project in PROJECTS.values():
        manifests = project_manifests(project)
        for manifest in manifests:
            backend.apply(manifest)
        manifests_delete(backend, list(reversed(manifests)))
    for workload in WORKLOADS.values():
        manifests = workload_manifests(workload)
        for manifest in manifests:
            backend.apply(manifest)
        manifests_delete(backend, manifests)
    backend.workload_statuses(
        namespace="acme-research",
        workloads={"train-42": "Job", "serve-42": "Deployment", "notebook-42": "Pod"},
    )
    backend.gpu_readings(workloads={"acme-research": {"train-42"}})  # Prometheus only
    api.pods = [{"metadata": {"name": "notebook-42"}}]
    list(backend.logs(namespace="acme-research", name="notebook-42", kind="Pod"))
    return api.requests


def expand(rules: list[dict]) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def tenant_role_rules() -> set[tuple[str, str, str]]:
    [role] = [
        m
        for m in project_manifests(next(iter(PROJECTS.values())))
        if m["kind"] == "Role" and m["metadata"]["name"] == TENANT_ROLE
    ]
    return expand(role["rules"])


def test_the_backend_makes_exactly_the_requests_its_constant_lists():
    assert requests_of_every_backend_call() == API_PERMISSIONS


@pytest.mark.parametrize("overlay", ["dev", "production"])
def test_the_cluster_role_holds_the_backends_requests_and_the_tenant_role_nothing_more(
    rendered, overlay
):
    role = objects_of(rendered[overlay], "ClusterRole")["gpu-cloud-portal"]
    assert expand(role["rules"]) == API_PERMISSIONS | tenant_role_rules()
    assert "*" not in {value for rule in role["rules"] for key in rule for value in rule[key]}


@pytest.mark.parametrize("overlay", ["dev", "production"])
def test_the_cluster_role_is_bound_to_the_portals_service_account(rendered, overlay):
    binding = objects_of(rendered[overlay], "ClusterRoleBinding")["gpu-cloud-portal"]
    [account] = objects_of(rendered[overlay], "ServiceAccount").values()
    assert binding["roleRef"]["name"] == "gpu-cloud-portal"
    assert binding["subjects"] == [
        {
            "kind": "ServiceAccount",
            "name": account["metadata"]["name"],
            "namespace": account["metadata"]["namespace"],
        }
    ]


@pytest.mark.parametrize(
    ("method", "path", "permission"),
    [
        ("GET", "/api/v1/nodes", ("", "nodes", "list")),
        ("PATCH", "/api/v1/nodes/n1", ("", "nodes", "patch")),
        ("GET", "/api/v1/namespaces/acme", ("", "namespaces", "get")),
        ("DELETE", "/api/v1/namespaces/acme", ("", "namespaces", "delete")),
        ("GET", "/api/v1/namespaces/acme/pods", ("", "pods", "list")),
        ("GET", "/api/v1/namespaces/acme/pods/p/log", ("", "pods/log", "get")),
        ("PUT", "/apis/batch/v1/namespaces/acme/jobs/j", ("batch", "jobs", "update")),
        (
            "POST",
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            ("scheduling.k8s.io", "priorityclasses", "create"),
        ),
    ],
)
def test_a_request_maps_to_the_permission_rbac_checks(method, path, permission):
    assert permission_of(method, path) == permission
