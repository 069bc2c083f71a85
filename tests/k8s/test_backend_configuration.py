"""Outside a cluster the backend is configured from KUBECONFIG, credentials included; the
portal's settings name the Prometheus it reads GPU metrics from."""

import pytest
import yaml

from scheduling.backends import get_backend
from scheduling.cluster.kubernetes import KubernetesBackend

from .test_backend_gpu_readings import FB_FREE, FB_USED, GPU_UTIL, _expect, _vector


@pytest.fixture
def kubeconfig(api_server, tmp_path, monkeypatch):
    """A kubeconfig naming the test server and a token, as KUBECONFIG, outside a cluster."""
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "lab", "cluster": {"server": api_server.url_for("/").rstrip("/")}}],
        "users": [{"name": "portal", "user": {"token": "portal-token"}}],
        "contexts": [{"name": "lab", "context": {"cluster": "lab", "user": "portal"}}],
        "current-context": "lab",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(path))


def test_outside_a_cluster_the_kubeconfig_names_the_server_and_the_token(api_server, kubeconfig):
    api_server.expect_ordered_request(
        "/api/v1/nodes", method="GET", headers={"Authorization": "Bearer portal-token"}
    ).respond_with_json({"kind": "NodeList", "metadata": {}, "items": []})
    assert KubernetesBackend.from_environment().list_nodes() == []


def test_the_portals_backend_reads_gpu_metrics_from_the_prometheus_of_its_settings(
    api_server, kubeconfig, settings
):
    settings.PORTAL_CLUSTER = "kubernetes"
    settings.PORTAL_PROMETHEUS_URL = api_server.url_for("/prometheus")
    for query in (GPU_UTIL, FB_USED, FB_FREE):
        _expect(api_server, query, _vector(("acme-research", "train-0", "50")))
    readings = get_backend().gpu_readings(workloads={"acme-research": {"train"}})
    assert readings[("acme-research", "train")].utilization == 0.5


def test_without_a_prometheus_in_its_settings_the_portals_backend_asks_none(
    api_server, kubeconfig, settings
):
    settings.PORTAL_CLUSTER = "kubernetes"
    settings.PORTAL_PROMETHEUS_URL = ""
    assert get_backend().gpu_readings(workloads={"acme-research": {"train"}}) == {}
    assert api_server.log == []
