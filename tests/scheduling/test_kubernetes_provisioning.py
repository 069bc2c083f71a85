"""Provisioning through the real Kubernetes backend, against a local server that answers like
the API server."""

import io
import json
import random

import kubernetes_validate
import pytest
import yaml
from django.core.management import call_command
from kubernetes.client import Configuration

from scheduling import services
from scheduling.cluster import ClusterError
from scheduling.cluster.kubernetes import KubernetesBackend
from scheduling.models import ProvisioningRecord

pytestmark = pytest.mark.django_db


@pytest.fixture
def kubernetes(httpserver):
    httpserver.no_handler_status_code = 418
    return KubernetesBackend.from_configuration(
        configuration=Configuration(host=httpserver.url_for("/").rstrip("/")),
        request_timeout=(1.0, 5.0),
        max_attempts=2,
        base_delay=0.01,
        sleep=lambda seconds: None,
        rng=random.Random(1),
    )


def status(code: int, reason: str, message: str) -> str:
    return json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "code": code,
            "reason": reason,
            "message": message,
        }
    )


def test_a_namespace_the_api_server_refuses_marks_the_project_failed_with_its_message(
    cluster, quotas, ai_dev, kubernetes, httpserver
):
    httpserver.expect_request("/api/v1/namespaces", method="POST").respond_with_data(
        status(422, "Invalid", 'Namespace "acme-ai-dev" is invalid: quota exceeded'),
        status=422,
        content_type="application/json",
    )
    record = services.project_provision(project_id=ai_dev.pk, backend=kubernetes)
    assert record.state == ProvisioningRecord.State.FAILED
    assert "quota exceeded" in record.error


def test_an_unavailable_api_server_leaves_provisioning_to_be_retried(
    cluster, quotas, ai_dev, kubernetes, httpserver
):
    httpserver.expect_request("/api/v1/namespaces", method="POST").respond_with_data(
        status(503, "ServiceUnavailable", "etcd leader changed"), status=503
    )
    with pytest.raises(ClusterError) as error:
        services.project_provision(project_id=ai_dev.pk, backend=kubernetes)
    record = ProvisioningRecord.objects.get(project=ai_dev)
    assert error.value.retryable
    assert (record.state, record.error.startswith("Retrying")) == ("pending", True)


@pytest.mark.parametrize("version", ["1.36.0", "1.37.0"])
def test_every_object_of_the_dry_run_validates_against_the_official_schema(
    cluster, quotas, ai_dev, version
):
    out = io.StringIO()
    call_command("cluster_manifests", stdout=out)
    documents = list(yaml.safe_load_all(out.getvalue()))
    for document in documents:
        kubernetes_validate.validate(document, version, strict=True)
    assert {d["kind"] for d in documents} >= {"PriorityClass", "Namespace", "ResourceQuota"}


def test_the_dry_run_narrows_to_one_organization(cluster, quotas, ai_dev, globex):
    from ..factories import ProjectFactory

    ProjectFactory(organization=globex, slug="web")
    out = io.StringIO()
    call_command("cluster_manifests", "--org", "globex", stdout=out)
    namespaces = [
        d["metadata"]["name"]
        for d in yaml.safe_load_all(out.getvalue())
        if d["kind"] == "Namespace"
    ]
    assert namespaces == ["globex-web"]
