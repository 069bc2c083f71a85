"""A `KubernetesBackend` talking to a local HTTP server that answers like the API server.

Waits between retries are recorded instead of slept, with a seeded jitter, so the retry tests
run instantly. Each test declares the requests it expects; after it, every one must have been
made and nothing else.
"""

import random

import pytest
import yaml
from kubernetes.client import Configuration

from portal.prometheus import PrometheusClient
from scheduling.cluster.kubernetes import KubernetesBackend
from scheduling.models import Cluster, GpuClass, NodePool

MAX_ATTEMPTS = 4
BASE_DELAY = 0.5
READ_TIMEOUT = 5.0  # generous: a busy test machine must not turn into a retry


@pytest.fixture
def delays() -> list[float]:
    return []


@pytest.fixture
def api_server(httpserver):
    # Not 500: an unexpected request must fail the test, not be retried as a server error.
    httpserver.no_handler_status_code = 418
    yield httpserver
    httpserver.check_assertions()
    assert httpserver.ordered_handlers == [], "expected requests that never came"


@pytest.fixture
def backend(api_server, delays) -> KubernetesBackend:
    return KubernetesBackend.from_configuration(
        configuration=Configuration(host=api_server.url_for("/").rstrip("/")),
        metrics=PrometheusClient(
            url=api_server.url_for("/prometheus"), timeout=(1.0, READ_TIMEOUT)
        ),
        request_timeout=(1.0, READ_TIMEOUT),
        max_attempts=MAX_ATTEMPTS,
        base_delay=BASE_DELAY,
        sleep=delays.append,
        rng=random.Random(2026),
    )


def status_body(*, code: int, reason: str, message: str) -> dict:
    """A metav1.Status, as the API server answers errors."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def kubernetes_cluster_add(*, name: str, url: str, gpu_class: GpuClass, folder) -> Cluster:
    """A Kubernetes cluster of the inventory named ``name`` (its region too) whose API server
    answers at ``url``, through a kubeconfig written in ``folder``, with a training pool of
    ``gpu_class``."""
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": url}}],
        "users": [{"name": "portal", "user": {"token": "portal-token"}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": "portal"}}],
        "current-context": name,
    }
    path = folder / f"{name}.kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig))
    cluster = Cluster.objects.create(
        name=name, region=name, backend="kubernetes", kubeconfig=str(path)
    )
    NodePool.objects.create(
        name=f"dgx-{name}", cluster=cluster, gpu_class=gpu_class, purpose="training"
    )
    return cluster
