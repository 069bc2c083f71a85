"""A project provisioned in two Kubernetes clusters, each a local server that answers like its
API server (it keeps what is posted, answers 409 AlreadyExists for what it has, 404 for what it
has not): one refuses the namespace, the other makes it; each cluster's record says so."""

import json
import re

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from scheduling import tasks
from scheduling.models import GpuClass, ProvisioningRecord, QuotaGrant
from tenants import services as tenant_services
from tenants.permissions import Caller

from .conftest import kubernetes_cluster_add, status_body

pytestmark = pytest.mark.django_db


class ApiServer:
    """What a cluster's API server keeps, by object path; `refused` answers every create with
    a 403 (the portal's service account lacks a right there)."""

    def __init__(self) -> None:
        self.objects: dict[str, dict] = {}
        self.refused = False
        self.server = HTTPServer()
        self.server.expect_request(re.compile(".*")).respond_with_handler(self.answer)

    def answer(self, request: Request) -> Response:
        if request.method == "POST":
            if self.refused:
                return _status(403, "Forbidden", "namespaces is forbidden for the portal")
            manifest = json.loads(request.data)
            path = f"{request.path}/{manifest['metadata']['name']}"
            if path in self.objects:
                return _status(409, "AlreadyExists", f"{path} already exists")
            self.objects[path] = {**manifest, "metadata": {**manifest["metadata"], "uid": path}}
            return Response(json.dumps(self.objects[path]), 201, content_type="application/json")
        if request.path not in self.objects:
            return _status(404, "NotFound", f"{request.path} not found")
        if request.method == "DELETE":
            self.objects.pop(request.path)
            return Response(json.dumps(status_body(code=200, reason="", message="")), 200)
        return Response(json.dumps(self.objects[request.path]), 200)

    def namespaces(self) -> set[str]:
        prefix = "/api/v1/namespaces/"
        return {path.removeprefix(prefix) for path in self.objects if path.count("/") == 4}


def _status(code: int, reason: str, message: str) -> Response:
    body = status_body(code=code, reason=reason, message=message)
    return Response(json.dumps(body), code, content_type="application/json")


@pytest.fixture
def api_servers(tmp_path, monkeypatch, acme):
    """eu-west and us-east, each a local API server, as clusters with an H100 pool that acme
    has a quota of."""
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    h100 = GpuClass.objects.create(name="H100-80GB", memory_gib=80)
    QuotaGrant.objects.create(organization=acme, gpu_class=h100, guarantee=8, limit=8)
    servers = {}
    for name in ("eu-west", "us-east"):
        api = ApiServer()
        api.server.start()
        kubernetes_cluster_add(
            name=name, url=api.server.url_for(""), gpu_class=h100, folder=tmp_path
        )
        servers[name] = api
    yield servers
    for api in servers.values():
        api.server.stop()


def states(project) -> dict[str, tuple[str, str]]:
    return {
        record.cluster.name: (record.state, record.error)
        for record in ProvisioningRecord.objects.filter(project=project).select_related("cluster")
    }


def test_one_cluster_refusing_the_namespace_fails_its_record_only(api_servers, ai_dev):
    api_servers["us-east"].refused = True
    assert tasks.project_provision(str(ai_dev.pk), "eu-west") == "ready"
    assert tasks.project_provision(str(ai_dev.pk), "us-east") == "failed"
    found = states(ai_dev)
    assert (found["eu-west"], found["us-east"][0]) == (("ready", ""), "failed")
    assert "namespaces is forbidden for the portal" in found["us-east"][1]
    assert api_servers["eu-west"].namespaces() == {"acme-ai-dev"}


def test_provisioning_both_clusters_again_changes_nothing(api_servers, ai_dev):
    for name in ("eu-west", "us-east"):
        tasks.project_provision(str(ai_dev.pk), name)
    kept = {name: dict(api.objects) for name, api in api_servers.items()}
    for name in ("eu-west", "us-east"):
        assert tasks.project_provision(str(ai_dev.pk), name) == "ready"
    assert {name: api.objects for name, api in api_servers.items()} == kept
    assert {name: len(objects) for name, objects in kept.items()} == {"eu-west": 7, "us-east": 7}


def test_deleting_the_project_removes_its_namespace_from_each_cluster(api_servers, ai_dev, alice):
    for name in ("eu-west", "us-east"):
        tasks.project_provision(str(ai_dev.pk), name)
    tenant_services.project_delete(caller=Caller(user=alice), project=ai_dev)
    for name in ("eu-west", "us-east"):
        assert tasks.project_deprovision(str(ai_dev.pk), name) == "removed"
    assert {name: api.objects for name, api in api_servers.items()} == {
        "eu-west": {},
        "us-east": {},
    }
