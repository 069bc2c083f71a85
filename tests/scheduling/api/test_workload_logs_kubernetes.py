"""GET …/workloads/{name}/logs/ with PORTAL_CLUSTER=kubernetes: the API reads the pods' log
API of a local server that answers like the API server (a kubeconfig points at it); a cluster
that refuses is a 503, or, while following, a last line that says so. A teardown keeps the
tail read there, and goes on when the cluster refuses it."""

import re

import pytest
import yaml

from portal import clock
from scheduling import services
from scheduling.backends import get_backend
from scheduling.models import Cluster, Workload, WorkloadLogTail
from tenants.permissions import Caller

pytestmark = pytest.mark.django_db

URL = "/api/v1/organizations/acme/projects/ai-dev/workloads/train-1/logs/"
PODS = "/api/v1/namespaces/acme-ai-dev/pods"


@pytest.fixture
def launched(ready, submit, cycle):
    """train-1, launched on the simulated cluster; then the portal is switched to Kubernetes."""
    submit(name="train-1", gpus=8)
    cycle()
    clock.advance(seconds=10)
    return ready


@pytest.fixture
def api_server(httpserver, settings, monkeypatch, tmp_path):
    httpserver.no_handler_status_code = 418
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "test", "cluster": {"server": httpserver.url_for("/").rstrip("/")}}],
        "users": [{"name": "portal", "user": {"token": "test-token"}}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "portal"}}],
        "current-context": "test",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig))
    monkeypatch.setenv("KUBECONFIG", str(path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    settings.PORTAL_CLUSTER = "kubernetes"
    settings.PORTAL_PROMETHEUS_URL = ""
    Cluster.objects.update(backend=Cluster.Backend.KUBERNETES)  # through the kubeconfig
    yield httpserver
    httpserver.check_assertions()


def _pod_listed(api_server) -> None:
    pod = {
        "metadata": {
            "name": "train-1-0-abcde",
            "labels": {"batch.kubernetes.io/job-completion-index": "0"},
        }
    }
    api_server.expect_ordered_request(
        PODS,
        query_string={"labelSelector": "gpu-cloud.io/workload=train-1", "limit": "500"},
    ).respond_with_json({"kind": "PodList", "items": [pod]})


def _log_answered(api_server, *, tail: int) -> None:
    """The pod's log, asked for its last ``tail`` lines, answers two."""
    api_server.expect_ordered_request(
        f"{PODS}/train-1-0-abcde/log",
        query_string={"container": "main", "timestamps": "true", "tailLines": str(tail)},
    ).respond_with_data("2026-12-01T10:00:01.5Z step 1\n2026-12-01T10:00:02Z step 2\n")


def _text(response) -> str:
    return b"".join(response.streaming_content if response.streaming else [response.content])


def test_the_logs_come_from_the_pods_log_api(launched, api_server, api_as):
    _pod_listed(api_server)
    _log_answered(api_server, tail=2)
    response = api_as(launched["viewer"]).get(f"{URL}?tail=2")
    assert (response.status_code, response.content) == (200, b"step 1\nstep 2\n")


def test_a_cluster_that_refuses_is_a_503(launched, api_server, api_as):
    _pod_listed(api_server)
    api_server.expect_ordered_request(f"{PODS}/train-1-0-abcde/log").respond_with_json(
        {"kind": "Status", "code": 403, "reason": "Forbidden", "message": "pods/log denied"},
        status=403,
    )
    response = api_as(launched["member"]).get(URL)
    assert (response.status_code, response.json()["error"]["code"]) == (503, "unavailable")
    assert "pods/log denied" in response.json()["error"]["message"]


def test_while_following_a_refusal_ends_the_lines_with_one_that_says_so(
    launched, api_server, api_as
):
    _pod_listed(api_server)
    api_server.expect_ordered_request(f"{PODS}/train-1-0-abcde/log").respond_with_json(
        {"kind": "Status", "code": 403, "reason": "Forbidden", "message": "pods/log denied"},
        status=403,
    )
    response = api_as(launched["member"]).get(f"{URL}?follow=true")
    assert response.status_code == 200
    [line] = _text(response).decode().splitlines()
    assert line.startswith("[portal] The log stream ended: the cluster did not answer:")
    assert "pods/log denied" in line


def _cancelled_and_torn_down(launched, api_server) -> Workload:
    """train-1 cancelled, then its objects deleted through the Kubernetes backend (each
    DELETE answered), as the worker does."""
    api_server.expect_request(re.compile(r".*"), method="DELETE").respond_with_json(
        {"kind": "Status", "status": "Success"}
    )
    workload = Workload.objects.get(name="train-1")
    services.workload_cancel(caller=Caller(user=launched["owner"]), workload=workload)
    services.workload_objects_delete(workload_id=workload.pk, backend=get_backend())
    workload.refresh_from_db()
    return workload


def test_a_teardown_keeps_the_tail_read_from_the_pods_log_api(launched, api_server, api_as):
    _pod_listed(api_server)
    _log_answered(api_server, tail=1001)  # one more than kept: was the log longer?
    assert _cancelled_and_torn_down(launched, api_server).objects_deleted_at is not None
    response = api_as(launched["viewer"]).get(URL)
    assert (response.content, response["X-Logs-Source"]) == (b"step 1\nstep 2\n", "kept-tail")


def test_a_cluster_that_refuses_the_logs_does_not_stop_the_teardown(launched, api_server):
    api_server.expect_ordered_request(PODS).respond_with_json(
        {"kind": "Status", "code": 403, "reason": "Forbidden", "message": "pods denied"},
        status=403,
    )
    assert _cancelled_and_torn_down(launched, api_server).objects_deleted_at is not None
    [kept] = WorkloadLogTail.objects.filter(workload__name="train-1")
    assert kept.lines == [] and "pods denied" in kept.failure


def test_logs_that_could_not_be_kept_are_gone_with_the_reason(launched, api_server, api_as):
    api_server.expect_ordered_request(PODS).respond_with_json(
        {"kind": "Status", "code": 403, "reason": "Forbidden", "message": "pods denied"},
        status=403,
    )
    _cancelled_and_torn_down(launched, api_server)
    error = api_as(launched["member"]).get(URL).json()["error"]
    assert error["code"] == "logs_gone" and "pods denied" in error["message"]
