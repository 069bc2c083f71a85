"""Workload status from the Job, Deployment or Pod, with the nodes its live pods run on."""

import pytest

from scheduling.cluster.specs import Phase, WorkloadStatus

from .conftest import status_body

NAMESPACE = "/namespaces/acme-research"
JOB = f"/apis/batch/v1{NAMESPACE}/jobs/training-42"
DEPLOYMENT = f"/apis/apps/v1{NAMESPACE}/deployments/inference-42"
POD = f"/api/v1{NAMESPACE}/pods/notebook-42"
PODS = f"/api/v1{NAMESPACE}/pods"


def _pod(name: str, *, node: str, phase: str) -> dict:
    return {"metadata": {"name": name}, "spec": {"nodeName": node}, "status": {"phase": phase}}


def _expect(api_server, path: str, workload: dict, *, pods: list[dict], name: str) -> None:
    api_server.expect_ordered_request(path, method="GET").respond_with_json(workload)
    api_server.expect_ordered_request(
        PODS, method="GET", query_string={"labelSelector": f"gpu-cloud.io/workload={name}"}
    ).respond_with_json({"kind": "PodList", "items": pods})


def _job(*, status: dict, completions: int = 2) -> dict:
    return {"kind": "Job", "spec": {"completions": completions}, "status": status}


def test_a_job_whose_pods_all_succeeded_has_succeeded(api_server, backend):
    pods = [_pod(f"training-42-{i}-x", node=f"n{i}", phase="Succeeded") for i in range(2)]
    _expect(api_server, JOB, _job(status={"succeeded": 2}), pods=pods, name="training-42")
    status = backend.workload_status(kind="Job", name="training-42", namespace="acme-research")
    assert status == WorkloadStatus(phase=Phase.SUCCEEDED)


@pytest.mark.parametrize(
    ("reason", "message"),
    [
        ("DeadlineExceeded", "Job was active longer than specified deadline"),
        ("BackoffLimitExceeded", "Job has reached the specified backoff limit"),
    ],
)
def test_a_failed_job_reports_the_reason_and_message_of_its_condition(
    api_server, backend, reason, message
):
    condition = {"type": "Failed", "status": "True", "reason": reason, "message": message}
    job = _job(status={"failed": 1, "succeeded": 1, "conditions": [condition]})
    _expect(api_server, JOB, job, pods=[], name="training-42")
    status = backend.workload_status(kind="Job", name="training-42", namespace="acme-research")
    assert status == WorkloadStatus(phase=Phase.FAILED, reason=reason, message=message)


def test_a_job_with_active_pods_is_running_on_the_nodes_of_its_live_pods(api_server, backend):
    pods = [
        _pod("training-42-0-abcde", node="dgx-h100-002", phase="Running"),
        _pod("training-42-1-fghij", node="dgx-h100-001", phase="Running"),
        _pod("training-42-1-older", node="dgx-h100-009", phase="Failed"),
    ]
    job = _job(status={"active": 2, "ready": 2})
    _expect(api_server, JOB, job, pods=pods, name="training-42")
    status = backend.workload_status(kind="Job", name="training-42", namespace="acme-research")
    assert status == WorkloadStatus(
        phase=Phase.RUNNING, ready_replicas=2, nodes=("dgx-h100-001", "dgx-h100-002")
    )


def test_a_job_without_active_pods_is_pending(api_server, backend):
    _expect(api_server, JOB, _job(status={}), pods=[], name="training-42")
    status = backend.workload_status(kind="Job", name="training-42", namespace="acme-research")
    assert status.phase == Phase.PENDING


def test_a_deployment_with_a_ready_replica_is_running(api_server, backend):
    deployment = {"kind": "Deployment", "status": {"replicas": 2, "readyReplicas": 1}}
    pods = [_pod("inference-42-7d9f-a", node="l4-001", phase="Running")]
    _expect(api_server, DEPLOYMENT, deployment, pods=pods, name="inference-42")
    status = backend.workload_status(
        kind="Deployment", name="inference-42", namespace="acme-research"
    )
    assert status == WorkloadStatus(phase=Phase.RUNNING, ready_replicas=1, nodes=("l4-001",))


def test_a_deployment_without_ready_replicas_is_pending_with_the_reason_it_is_stuck(
    api_server, backend
):
    stuck = {
        "type": "Progressing",
        "status": "False",
        "reason": "ProgressDeadlineExceeded",
        "message": 'ReplicaSet "inference-42-7d9f" has timed out progressing.',
    }
    deployment = {"kind": "Deployment", "status": {"replicas": 2, "conditions": [stuck]}}
    _expect(api_server, DEPLOYMENT, deployment, pods=[], name="inference-42")
    status = backend.workload_status(
        kind="Deployment", name="inference-42", namespace="acme-research"
    )
    assert status == WorkloadStatus(
        phase=Phase.PENDING, reason="ProgressDeadlineExceeded", message=stuck["message"]
    )


def test_a_running_notebook_pod_is_running_with_one_ready_replica(api_server, backend):
    pod = {
        "kind": "Pod",
        "spec": {"nodeName": "a100-mig-002"},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }
    _expect(api_server, POD, pod, pods=[{**pod, "metadata": {}}], name="notebook-42")
    status = backend.workload_status(kind="Pod", name="notebook-42", namespace="acme-research")
    assert status == WorkloadStatus(phase=Phase.RUNNING, ready_replicas=1, nodes=("a100-mig-002",))


def test_a_pod_that_cannot_pull_its_image_is_pending_with_the_reason(api_server, backend):
    waiting = {"reason": "ImagePullBackOff", "message": 'Back-off pulling image "nvcr.io/x"'}
    pod = {
        "kind": "Pod",
        "status": {"phase": "Pending", "containerStatuses": [{"state": {"waiting": waiting}}]},
    }
    _expect(api_server, POD, pod, pods=[], name="notebook-42")
    status = backend.workload_status(kind="Pod", name="notebook-42", namespace="acme-research")
    assert status == WorkloadStatus(
        phase=Phase.PENDING, reason="ImagePullBackOff", message=waiting["message"]
    )


LOST_POD_STATUSES = {
    "kubelet silent": {"phase": "Unknown"},
    "deleted by the node controller": {"phase": "Running", "reason": "NodeLost"},
    "evicted by the unreachable taint": {
        "phase": "Failed",
        "conditions": [
            {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager"}
        ],
    },
}


@pytest.mark.parametrize("pod_status", LOST_POD_STATUSES.values(), ids=LOST_POD_STATUSES.keys())
def test_a_gang_with_a_pod_on_a_lost_node_has_failed_for_the_lost_node(
    api_server, backend, pod_status
):
    condition = {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}
    job = _job(status={"active": 1, "failed": 1, "conditions": [condition]})
    pods = [
        _pod("training-42-0-abcde", node="dgx-h100-001", phase="Running"),
        {**_pod("training-42-1-fghij", node="dgx-h100-002", phase=""), "status": pod_status},
    ]
    _expect(api_server, JOB, job, pods=pods, name="training-42")
    status = backend.workload_status(kind="Job", name="training-42", namespace="acme-research")
    assert (status.phase, status.reason) == (Phase.FAILED, "NodeLost")
    assert status.lost_nodes == ("dgx-h100-002",)


def test_a_job_that_succeeded_before_its_node_was_lost_has_still_succeeded(api_server, backend):
    lost = {
        **_pod("training-42-1-fghij", node="dgx-h100-002", phase=""),
        "status": {"phase": "Unknown"},
    }
    _expect(api_server, JOB, _job(status={"succeeded": 2}), pods=[lost], name="training-42")
    status = backend.workload_status(kind="Job", name="training-42", namespace="acme-research")
    assert status.phase == Phase.SUCCEEDED


def test_a_workload_whose_object_is_gone_is_missing(api_server, backend):
    api_server.expect_ordered_request(JOB, method="GET").respond_with_json(
        status_body(code=404, reason="NotFound", message='jobs.batch "training-42" not found'),
        status=404,
    )
    status = backend.workload_status(kind="Job", name="training-42", namespace="acme-research")
    assert status == WorkloadStatus(phase=Phase.MISSING)
