"""What monitoring sees of running workloads' GPUs, from DCGM exporter metrics in Prometheus:
a few queries for every workload of the namespaces asked, each pod's figures given to its
workload."""

import random

import pytest
from kubernetes.client import Configuration

from scheduling.cluster.kubernetes import KubernetesBackend, workload_of_pod
from scheduling.cluster.specs import GpuReading

QUERY = "/prometheus/api/v1/query"
SCOPE = 'pod!=""'
GPU_UTIL = f"avg by (namespace, pod) (DCGM_FI_DEV_GPU_UTIL{{{SCOPE}}})"
ENGINE_ACTIVE = f"avg by (namespace, pod) (DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{SCOPE}}})"
FB_USED = f"sum by (namespace, pod) (DCGM_FI_DEV_FB_USED{{{SCOPE}}})"
FB_FREE = f"sum by (namespace, pod) (DCGM_FI_DEV_FB_FREE{{{SCOPE}}})"
ASKED = {"acme-research": {"train", "train-2"}, "acme-vision": {"notebook"}}


def _vector(*samples: tuple[str, str, str]) -> dict:
    """Prometheus's answer: one sample per (namespace, pod, value)."""
    result = [
        {"metric": {"namespace": namespace, "pod": pod}, "value": [1796126400.0, value]}
        for namespace, pod, value in samples
    ]
    return {"status": "success", "data": {"resultType": "vector", "result": result}}


def _expect(api_server, query: str, answer: dict, status: int = 200) -> None:
    api_server.expect_ordered_request(
        QUERY, method="GET", query_string={"query": query}
    ).respond_with_json(answer, status=status)


def _memory(api_server, used: dict, free: dict) -> None:
    _expect(api_server, FB_USED, _vector(*used))
    _expect(api_server, FB_FREE, _vector(*free))


def test_each_workload_reads_the_mean_utilization_of_its_pods(api_server, backend):
    _expect(
        api_server,
        GPU_UTIL,
        _vector(
            ("acme-research", "train-worker-0", "40"),
            ("acme-research", "train-worker-1", "60"),
            ("acme-vision", "notebook", "2"),
            ("globex-lab", "train-worker-0", "99"),  # not asked
        ),
    )
    _memory(api_server, (), ())
    readings = backend.gpu_readings(workloads=ASKED)
    assert {key: r.utilization for key, r in readings.items()} == {
        ("acme-research", "train"): 0.5,
        ("acme-vision", "notebook"): 0.02,
    }


def test_a_pod_belongs_to_the_longest_workload_name_it_starts_with(api_server, backend):
    _expect(
        api_server,
        GPU_UTIL,
        _vector(("acme-research", "train-2-worker-0", "90"), ("acme-research", "train-0", "10")),
    )
    _memory(api_server, (), ())
    readings = backend.gpu_readings(workloads=ASKED)
    assert {key[1]: r.utilization for key, r in readings.items()} == {
        "train-2": 0.9,
        "train": 0.1,
    }


def test_memory_used_is_framebuffer_used_over_framebuffer_held(api_server, backend):
    _expect(api_server, GPU_UTIL, _vector(("acme-research", "train-worker-0", "10")))
    _memory(
        api_server,
        used=(("acme-research", "train-worker-0", "76000"), ("acme-research", "train-w-1", "0")),
        free=(("acme-research", "train-worker-0", "4000"), ("acme-research", "train-w-1", "80000")),
    )
    reading = backend.gpu_readings(workloads=ASKED)[("acme-research", "train")]
    assert reading == GpuReading(utilization=0.1, memory_used=76000 / 160000)


def test_without_gpu_util_data_the_graphics_engine_activity_is_used(api_server, backend):
    _expect(api_server, GPU_UTIL, _vector())
    _expect(api_server, ENGINE_ACTIVE, _vector(("acme-vision", "notebook", "0.31")))
    _memory(api_server, (), ())
    assert backend.gpu_readings(workloads=ASKED)[("acme-vision", "notebook")].utilization == 0.31


def test_a_workload_monitoring_does_not_see_is_absent_not_idle(api_server, backend):
    _expect(api_server, GPU_UTIL, _vector())
    _expect(api_server, ENGINE_ACTIVE, _vector(("acme-research", "train-x", "NaN")))
    _memory(api_server, (), ())
    assert backend.gpu_readings(workloads=ASKED) == {}


def test_a_prometheus_error_makes_every_reading_unknown(api_server, backend):
    overloaded = {"status": "error", "error": "overloaded"}
    for query in (GPU_UTIL, ENGINE_ACTIVE, FB_USED, FB_FREE):
        _expect(api_server, query, overloaded, status=503)
    assert backend.gpu_readings(workloads=ASKED) == {}


def test_without_prometheus_nothing_is_asked(api_server):
    backend = KubernetesBackend.from_configuration(
        configuration=Configuration(host=api_server.url_for("/").rstrip("/")),
        rng=random.Random(1),
    )
    assert (backend.gpu_readings(workloads=ASKED), api_server.log) == ({}, [])


@pytest.mark.parametrize(
    ("pod", "owner"),
    [
        ("notebook", "notebook"),
        ("train-abc12", "train"),
        ("train-2-abc12", "train-2"),
        ("trainer-abc12", None),
    ],
)
def test_a_pod_is_its_workloads_by_name(pod, owner):
    assert workload_of_pod(pod, {"notebook", "train", "train-2"}) == owner
