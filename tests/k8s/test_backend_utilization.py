"""GPU utilization of a workload from DCGM exporter metrics in Prometheus."""

import random

from kubernetes.client import Configuration

from scheduling.cluster.kubernetes import KubernetesBackend

QUERY = "/prometheus/api/v1/query"
SELECTOR = 'namespace="acme-research",pod=~"training-42(-.*)?"'
GPU_UTIL = f"avg(DCGM_FI_DEV_GPU_UTIL{{{SELECTOR}}})"
ENGINE_ACTIVE = f"avg(DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{SELECTOR}}})"


def _vector(*values: str) -> dict:
    result = [{"metric": {}, "value": [1796126400.0, value]} for value in values]
    return {"status": "success", "data": {"resultType": "vector", "result": result}}


def _expect(api_server, query: str, answer: dict, status: int = 200) -> None:
    api_server.expect_ordered_request(
        QUERY, method="GET", query_string={"query": query}
    ).respond_with_json(answer, status=status)


def test_utilization_is_the_mean_dcgm_gpu_utilization_as_a_fraction(api_server, backend):
    _expect(api_server, GPU_UTIL, _vector("42.5"))
    assert backend.gpu_utilization(namespace="acme-research", workload="training-42") == 0.425


def test_without_gpu_util_data_the_graphics_engine_activity_is_used(api_server, backend):
    _expect(api_server, GPU_UTIL, _vector())
    _expect(api_server, ENGINE_ACTIVE, _vector("0.31"))
    assert backend.gpu_utilization(namespace="acme-research", workload="training-42") == 0.31


def test_without_any_data_utilization_is_unknown(api_server, backend):
    _expect(api_server, GPU_UTIL, _vector())
    _expect(api_server, ENGINE_ACTIVE, _vector("NaN"))
    assert backend.gpu_utilization(namespace="acme-research", workload="training-42") is None


def test_a_prometheus_error_makes_utilization_unknown_not_zero(api_server, backend):
    _expect(api_server, GPU_UTIL, {"status": "error", "error": "overloaded"}, status=503)
    _expect(api_server, ENGINE_ACTIVE, {"status": "error", "error": "overloaded"}, status=503)
    assert backend.gpu_utilization(namespace="acme-research", workload="training-42") is None


def test_without_prometheus_utilization_is_unknown_and_nothing_is_asked(api_server):
    backend = KubernetesBackend.from_configuration(
        configuration=Configuration(host=api_server.url_for("/").rstrip("/")),
        rng=random.Random(1),
    )
    assert backend.gpu_utilization(namespace="acme-research", workload="training-42") is None
    assert api_server.log == []


MEMORY = (
    f"sum(DCGM_FI_DEV_FB_USED{{{SELECTOR}}}) / (sum(DCGM_FI_DEV_FB_USED{{{SELECTOR}}})"
    f" + sum(DCGM_FI_DEV_FB_FREE{{{SELECTOR}}}))"
)


def test_memory_used_is_framebuffer_used_over_framebuffer_held(api_server, backend):
    _expect(api_server, MEMORY, _vector("0.93"))
    assert backend.gpu_memory_used(namespace="acme-research", workload="training-42") == 0.93


def test_without_framebuffer_data_memory_used_is_unknown(api_server, backend):
    _expect(api_server, MEMORY, _vector())
    assert backend.gpu_memory_used(namespace="acme-research", workload="training-42") is None
