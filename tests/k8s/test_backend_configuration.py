"""Outside a cluster the backend is configured from KUBECONFIG, credentials included."""

import yaml

from scheduling.cluster.kubernetes import KubernetesBackend


def test_outside_a_cluster_the_kubeconfig_names_the_server_and_the_token(
    api_server, tmp_path, monkeypatch
):
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
    api_server.expect_ordered_request(
        "/api/v1/nodes", method="GET", headers={"Authorization": "Bearer portal-token"}
    ).respond_with_json({"kind": "NodeList", "metadata": {}, "items": []})
    assert KubernetesBackend.from_environment().list_nodes() == []
