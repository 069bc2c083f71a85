"""The simulated cluster as a backend: what it stores, how its workloads run on the portal's
clock, and the nodes it reports (deploy/clusters/demo.yaml)."""

import pytest

from portal import clock
from scheduling.cluster import ClusterError
from scheduling.cluster.manifests import workload_manifests
from scheduling.cluster.specs import GpuReading, Phase, TaintSpec, WorkloadKind

from ..k8s.examples import workload_spec

pytestmark = pytest.mark.django_db

GPU_TAINT = TaintSpec(key="nvidia.com/gpu", value="present", effect="NoSchedule")


def _job(name="train", *, env=None, nodes=("dgx-h100-01",), max_runtime_seconds=None) -> dict:
    spec = workload_spec(
        WorkloadKind.TRAINING,
        name=name,
        env=env or {},
        nodes=nodes,
        max_runtime_seconds=max_runtime_seconds,
    )
    return next(m for m in workload_manifests(spec) if m["kind"] == "Job")


def _status(backend, name="train", kind="Job"):
    return backend.workload_statuses(namespace="acme-research", workloads={name: kind})[name]


def _node(backend, name):
    return next(node for node in backend.list_nodes() if node.name == name)


def test_the_nodes_are_the_description_files_all_ready(backend):
    nodes = backend.list_nodes()
    assert len(nodes) == 16 and all(node.ready for node in nodes)


def test_labeling_a_node_adds_to_its_labels_and_replaces_its_taints(backend):
    backend.label_node(name="l4-01", labels={"a": "1"}, taints=(GPU_TAINT,))
    backend.label_node(name="l4-01", labels={"b": "2"}, taints=())
    node = _node(backend, "l4-01")
    assert (node.labels["a"], node.labels["b"], node.taints) == ("1", "2", ())
    assert node.labels["nvidia.com/gpu.product"] == "NVIDIA-L4"


def test_a_failed_node_is_not_ready_until_it_recovers(backend):
    backend.node_fail(name="l4-02")
    assert not _node(backend, "l4-02").ready
    backend.node_recover(name="l4-02")
    assert _node(backend, "l4-02").ready


def test_applying_returns_what_is_stored(backend):
    job = _job()
    assert backend.apply(job) == job


def test_a_manifest_with_problems_is_refused_as_invalid(backend):
    job = _job()
    job["metadata"]["name"] = "Not_A_Name"
    with pytest.raises(ClusterError) as refused:
        backend.apply(job)
    assert refused.value.status == 422


def test_applying_again_changes_the_object_but_not_when_it_started(backend):
    backend.apply(_job())
    clock.advance(seconds=10)
    changed = _job(env={"SIMULATED_RUNTIME_SECONDS": "1"})
    assert backend.apply(changed) == changed
    assert _status(backend).phase == Phase.SUCCEEDED


def test_an_object_never_applied_is_missing(backend):
    assert _status(backend).phase == Phase.MISSING


def test_a_deleted_object_is_missing_and_deleting_it_again_is_fine(backend):
    job = _job()
    backend.apply(job)
    for _ in range(2):
        backend.delete(api_version="batch/v1", kind="Job", name="train", namespace="acme-research")
    assert _status(backend).phase == Phase.MISSING


def test_a_job_is_pending_while_it_starts(backend):
    backend.apply(_job())
    assert _status(backend).phase == Phase.PENDING


def test_a_job_runs_its_replicas_after_starting_on_its_nodes(backend):
    backend.apply(_job())
    clock.advance(seconds=5)
    status = _status(backend)
    assert (status.phase, status.ready_replicas, status.nodes) == (
        Phase.RUNNING,
        1,
        ("dgx-h100-01",),
    )


def test_a_job_succeeds_after_its_runtime(backend):
    backend.apply(_job(env={"SIMULATED_RUNTIME_SECONDS": "60"}))
    clock.advance(seconds=64)
    assert _status(backend).phase == Phase.RUNNING
    clock.advance(seconds=1)
    assert _status(backend).phase == Phase.SUCCEEDED


def test_a_job_told_to_fail_fails_at_the_end_of_its_runtime(backend):
    backend.apply(_job(env={"SIMULATED_RUNTIME_SECONDS": "60", "SIMULATED_EXIT": "fail"}))
    clock.advance(seconds=65)
    status = _status(backend)
    assert (status.phase, status.reason) == (Phase.FAILED, "BackoffLimitExceeded")


def test_a_job_longer_than_its_deadline_fails_at_the_deadline(backend):
    backend.apply(_job(max_runtime_seconds=100))
    clock.advance(seconds=100)
    status = _status(backend)
    assert (status.phase, status.reason) == (Phase.FAILED, "DeadlineExceeded")


def test_a_job_on_a_failed_node_is_lost(backend):
    backend.apply(_job())
    clock.advance(seconds=5)
    backend.node_fail(name="dgx-h100-01")
    status = _status(backend)
    assert status.lost_nodes == ("dgx-h100-01",)


def test_a_deployment_runs_its_replicas_until_deleted(backend):
    spec = workload_spec(WorkloadKind.INFERENCE, name="serve", replicas=2, nodes=())
    for manifest in workload_manifests(spec):
        backend.apply(manifest)
    clock.advance(seconds=86_400)
    status = _status(backend, "serve", "Deployment")
    assert (status.phase, status.ready_replicas) == (Phase.RUNNING, 2)


def test_gpu_readings_come_from_the_environment_and_default_to_busy(backend):
    backend.apply(_job("busy"))
    backend.apply(_job("idle", env={"SIMULATED_GPU_UTIL": "0.1", "SIMULATED_GPU_MEMORY": "0.2"}))
    backend.apply(_job("unasked"))
    readings = backend.gpu_readings(workloads={"acme-research": ["busy", "idle"]})
    assert readings == {
        ("acme-research", "busy"): GpuReading(utilization=0.8, memory_used=0.5),
        ("acme-research", "idle"): GpuReading(utilization=0.1, memory_used=0.2),
    }


def _delete(backend, name="train"):
    backend.delete(api_version="batch/v1", kind="Job", name=name, namespace="acme-research")


def _running_job_with_notice(backend, seconds: int, *, name="train", gpus=8) -> None:
    job = _job(name)
    pod = job["spec"]["template"]["spec"]
    pod["terminationGracePeriodSeconds"] = seconds
    pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = str(gpus)
    backend.apply(job)
    clock.advance(seconds=60)


def test_a_deleted_running_job_terminates_for_its_notice_then_is_gone(backend):
    _running_job_with_notice(backend, 120)
    _delete(backend)
    clock.advance(seconds=119)
    phases = [_status(backend).phase]
    clock.advance(seconds=1)
    assert [*phases, _status(backend).phase] == [Phase.RUNNING, Phase.MISSING]


def test_a_job_that_never_started_is_deleted_at_once(backend):
    job = _job()
    job["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 120
    backend.apply(job)
    _delete(backend)
    assert _status(backend).phase == Phase.MISSING


def test_new_pods_wait_for_the_gpus_terminating_pods_hold_on_their_node(backend):
    _running_job_with_notice(backend, 120)
    _delete(backend)
    backend.apply(_job("next"))
    clock.advance(seconds=60)
    waiting = _status(backend, "next")
    clock.advance(seconds=60 + 5)  # the notice has passed, and the pods started
    assert (waiting.phase, waiting.reason, _status(backend, "next").phase) == (
        Phase.PENDING,
        "WaitingForGPUs",
        Phase.RUNNING,
    )


def test_new_pods_start_at_once_beside_terminating_ones_when_their_gpus_are_free(backend):
    _running_job_with_notice(backend, 120, gpus=4)
    _delete(backend)
    half = _job("half")
    half["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "4"
    backend.apply(half)
    clock.advance(seconds=5)
    assert _status(backend, "half").phase == Phase.RUNNING


def test_an_object_applied_again_while_it_terminates_is_refused_until_it_is_gone(backend):
    _running_job_with_notice(backend, 120)
    _delete(backend)
    with pytest.raises(ClusterError) as refused:
        backend.apply(_job())
    clock.advance(seconds=120)
    backend.apply(_job())
    assert (refused.value.status, refused.value.retryable) == (409, True)
    assert _status(backend).phase == Phase.PENDING  # created anew: starting


def test_a_terminated_object_is_forgotten_when_new_pods_are_placed(backend):
    from scheduling.models import SimulatedObject

    _running_job_with_notice(backend, 120)
    _delete(backend)
    clock.advance(seconds=120)
    backend.apply(_job("next"))
    assert not SimulatedObject.objects.filter(name="train").exists()


def test_the_store_lists_only_the_terminating_objects_when_asked(backend):
    from scheduling.backends import DatabaseSimulatorStore
    from scheduling.models import SimulatedObject

    _running_job_with_notice(backend, 120, name="leaving")
    _running_job_with_notice(backend, 120, name="staying", gpus=0)
    _delete(backend, "leaving")
    store = DatabaseSimulatorStore(cluster=SimulatedObject.objects.get(name="leaving").cluster)
    terminating = store.objects_of_kinds(kinds=["Job"], terminating=True)
    everything = store.objects_of_kinds(kinds=["Job"])
    assert ([o.name for o in terminating], sorted(o.name for o in everything)) == (
        ["leaving"],
        ["leaving", "staying"],
    )
