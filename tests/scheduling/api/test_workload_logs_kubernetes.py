"""GET …/workloads/{name}/logs/ with PORTAL_CLUSTER=kubernetes: the API reads the pods' log
API of a local server that answers like the API server (a kubeconfig points at it); a cluster
that refuses is a 503, or, while following, a last line that says so."""

import pytest
import yaml

from portal import clock

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


def _text(response) -> str:
    return b"".join(response.streaming_content if response.streaming else [response.content])


def test_the_logs_come_from_the_pods_log_api(launched, api_server, api_as):
    _pod_listed(api_server)
    api_server.expect_ordered_request(
        f"{PODS}/train-1-0-abcde/log",
        query_string={"container": "main", "timestamps": "true", "tailLines": "2"},
    ).respond_with_data("2026-12-01T10:00:01.5Z step 1\n2026-12-01T10:00:02Z step 2\n")
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
