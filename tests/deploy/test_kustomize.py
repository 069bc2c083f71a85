"""Every overlay renders, and every object it renders is valid for Kubernetes, strictly."""

import kubernetes_validate
import pytest

from .conftest import OVERLAYS, objects_of, render

VERSIONS = ("1.36.0", "1.37.0")
# Custom resources are not in kubernetes-validate's schemas: checked by their own test below.
CUSTOM_KINDS = {"ServiceMonitor"}


def documents():
    return [
        pytest.param(overlay, document, id=f"{overlay}-{document['kind']}-{name}")
        for overlay in OVERLAYS
        for document in render(overlay)
        for name in [document["metadata"]["name"]]
        if document["kind"] not in CUSTOM_KINDS
    ]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(("overlay", "document"), documents())
def test_every_rendered_object_validates_strictly(overlay, document, version):
    kubernetes_validate.validate(document, version, strict=True)


def test_strict_validation_catches_a_misspelt_field(rendered):
    deployment = objects_of(rendered["production"], "Deployment")["portal-web"]
    deployment["spec"]["template"]["spec"]["containers"][0]["livenesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, VERSIONS[-1], strict=True)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_overlay_renders_every_kind_of_the_deployment(rendered, overlay):
    kinds = {document["kind"] for document in rendered[overlay]}
    assert kinds >= {
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "Deployment",
        "Job",
        "Service",
        "Ingress",
        "PodDisruptionBudget",
        "ServiceMonitor",
    }
    assert set(objects_of(rendered[overlay], "Deployment")) == {
        "portal-web",
        "portal-worker",
        "portal-worker-cycle",
        "portal-beat",
    }


# The fields of monitoring.coreos.com/v1 ServiceMonitor this deployment uses, as the Prometheus
# Operator's CRD defines them (a subset: anything else here is a mistake).
SERVICE_MONITOR_ENDPOINT_FIELDS = {
    "port",
    "path",
    "scheme",
    "interval",
    "scrapeTimeout",
    "authorization",
}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_service_monitor_scrapes_the_web_service_with_a_bearer_token(rendered, overlay):
    monitor = objects_of(rendered[overlay], "ServiceMonitor")["portal-web"]
    service = objects_of(rendered[overlay], "Service")["portal-web"]
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert set(monitor) == {"apiVersion", "kind", "metadata", "spec"}
    assert set(monitor["spec"]) == {"selector", "endpoints"}
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= service["metadata"]["labels"].items()
    [endpoint] = monitor["spec"]["endpoints"]
    assert set(endpoint) <= SERVICE_MONITOR_ENDPOINT_FIELDS
    assert endpoint["port"] in {port["name"] for port in service["spec"]["ports"]}
    assert (endpoint["path"], endpoint["scheme"]) == ("/metrics", "http")
    assert endpoint["authorization"] == {
        "type": "Bearer",
        "credentials": {"name": "portal-metrics", "key": "token"},
    }


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_pods_read_the_same_metrics_token_prometheus_presents(rendered, overlay):
    web = objects_of(rendered[overlay], "Deployment")["portal-web"]
    [container] = web["spec"]["template"]["spec"]["containers"]
    token = {e["name"]: e.get("valueFrom") for e in container["env"]}["PORTAL_METRICS_TOKEN"]
    assert token == {"secretKeyRef": {"name": "portal-metrics", "key": "token"}}
