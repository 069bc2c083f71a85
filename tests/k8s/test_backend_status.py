"""Workload status from the Job, Deployment or Pod, with the nodes its live pods run on, read
for a whole namespace from one listing of the pods and one per other kind."""

import pytest

from scheduling.cluster import ClusterError
from scheduling.cluster.specs import Phase, WorkloadStatus

NAMESPACE = "/namespaces/acme-research"
COLLECTIONS = {
    "Job": f"/apis/batch/v1{NAMESPACE}/jobs",
    "Deployment": f"/apis/apps/v1{NAMESPACE}/deployments",
}
PODS = f"/api/v1{NAMESPACE}/pods"
LABEL = "gpu-cloud.io/workload"
OURS = {"labelSelector": LABEL, "limit": "500"}


def _labelled(item: dict, *, name: str, workload: str) -> dict:
    metadata = {**item.get("metadata", {}), "name": name, "labels": {LABEL: workload}}
    return {**item, "metadata": metadata}


def _pod(name: str, *, node: str, phase: str) -> dict:
    return {"metadata": {"name": name}, "spec": {"nodeName": node}, "status": {"phase": phase}}


def _status(
    api_server, backend, *, kind: str, name: str, workload: dict | None, pods: list[dict]
) -> WorkloadStatus:
    """Answer the listings with the workload's object (None: it is gone) and its pods, and
    read its status."""
    pods = [_labelled(pod, name=pod["metadata"]["name"], workload=name) for pod in pods]
    own = [_labelled(workload, name=name, workload=name)] if workload is not None else []
    api_server.expect_ordered_request(PODS, method="GET", query_string=OURS).respond_with_json(
        {"kind": "PodList", "items": pods + (own if kind == "Pod" else [])}
    )
    if kind != "Pod":
        api_server.expect_ordered_request(
            COLLECTIONS[kind], method="GET", query_string=OURS
        ).respond_with_json({"kind": f"{kind}List", "items": own})
    return backend.workload_statuses(namespace="acme-research", workloads={name: kind})[name]


def _training_status(api_server, backend, job: dict | None, *, pods: list[dict]) -> WorkloadStatus:
    """The status of the Job training-42."""
    return _status(api_server, backend, kind="Job", name="training-42", workload=job, pods=pods)


def _job(*, status: dict, completions: int = 2) -> dict:
    return {"kind": "Job", "spec": {"completions": completions}, "status": status}


def test_a_job_whose_pods_all_succeeded_has_succeeded(api_server, backend):
    pods = [_pod(f"training-42-{i}-x", node=f"n{i}", phase="Succeeded") for i in range(2)]
    status = _training_status(api_server, backend, _job(status={"succeeded": 2}), pods=pods)
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
    status = _training_status(api_server, backend, job, pods=[])
    assert status == WorkloadStatus(phase=Phase.FAILED, reason=reason, message=message)


def test_a_job_with_active_pods_is_running_on_the_nodes_of_its_live_pods(api_server, backend):
    pods = [
        _pod("training-42-0-abcde", node="dgx-h100-002", phase="Running"),
        _pod("training-42-1-fghij", node="dgx-h100-001", phase="Running"),
        _pod("training-42-1-older", node="dgx-h100-009", phase="Failed"),
    ]
    job = _job(status={"active": 2, "ready": 2})
    status = _training_status(api_server, backend, job, pods=pods)
    assert status == WorkloadStatus(
        phase=Phase.RUNNING, ready_replicas=2, nodes=("dgx-h100-001", "dgx-h100-002")
    )


def test_a_job_without_active_pods_is_pending(api_server, backend):
    status = _status(
        api_server, backend, kind="Job", name="training-42", workload=_job(status={}), pods=[]
    )
    assert status.phase == Phase.PENDING


def test_a_deployment_with_a_ready_replica_is_running(api_server, backend):
    deployment = {"kind": "Deployment", "status": {"replicas": 2, "readyReplicas": 1}}
    pods = [_pod("inference-42-7d9f-a", node="l4-001", phase="Running")]
    status = _status(
        api_server, backend, kind="Deployment", name="inference-42", workload=deployment, pods=pods
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
    status = _status(
        api_server, backend, kind="Deployment", name="inference-42", workload=deployment, pods=[]
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
    status = _status(
        api_server,
        backend,
        kind="Pod",
        name="notebook-42",
        workload=pod,
        pods=[],
    )
    assert status == WorkloadStatus(phase=Phase.RUNNING, ready_replicas=1, nodes=("a100-mig-002",))


def test_a_pod_that_cannot_pull_its_image_is_pending_with_the_reason(api_server, backend):
    waiting = {"reason": "ImagePullBackOff", "message": 'Back-off pulling image "nvcr.io/x"'}
    pod = {
        "kind": "Pod",
        "status": {"phase": "Pending", "containerStatuses": [{"state": {"waiting": waiting}}]},
    }
    status = _status(api_server, backend, kind="Pod", name="notebook-42", workload=pod, pods=[])
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
    status = _training_status(api_server, backend, job, pods=pods)
    assert (status.phase, status.reason) == (Phase.FAILED, "NodeLost")
    assert status.lost_nodes == ("dgx-h100-002",)


def test_a_job_that_succeeded_before_its_node_was_lost_has_still_succeeded(api_server, backend):
    lost = {
        **_pod("training-42-1-fghij", node="dgx-h100-002", phase=""),
        "status": {"phase": "Unknown"},
    }
    status = _training_status(api_server, backend, _job(status={"succeeded": 2}), pods=[lost])
    assert status.phase == Phase.SUCCEEDED


def test_a_workload_whose_object_is_gone_is_missing(api_server, backend):
    status = _training_status(api_server, backend, None, pods=[])
    assert status == WorkloadStatus(phase=Phase.MISSING)


def test_the_statuses_of_many_workloads_take_one_listing_of_pods_and_one_per_other_kind(
    api_server, backend
):
    names = [f"training-{n}" for n in range(50)]
    jobs = [_labelled(_job(status={"active": 1}), name=name, workload=name) for name in names]
    pods = [
        _labelled(
            _pod(f"{name}-0-x", node="n1", phase="Running"), name=f"{name}-0-x", workload=name
        )
        for name in names
    ]
    api_server.expect_ordered_request(PODS, query_string=OURS).respond_with_json({"items": pods})
    api_server.expect_ordered_request(COLLECTIONS["Job"], query_string=OURS).respond_with_json(
        {"items": jobs}
    )
    statuses = backend.workload_statuses(
        namespace="acme-research", workloads=dict.fromkeys(names, "Job")
    )
    assert {status.phase for status in statuses.values()} == {Phase.RUNNING}
    assert set(statuses) == set(names)


def test_a_listing_of_many_pages_is_followed_to_its_last_page(api_server, backend):
    first = _labelled(_job(status={"active": 1}), name="training-1", workload="training-1")
    second = _labelled(_job(status={"succeeded": 2}), name="training-2", workload="training-2")
    api_server.expect_ordered_request(PODS, query_string=OURS).respond_with_json({"items": []})
    api_server.expect_ordered_request(COLLECTIONS["Job"], query_string=OURS).respond_with_json(
        {"items": [first], "metadata": {"continue": "page-2"}}
    )
    api_server.expect_ordered_request(
        COLLECTIONS["Job"], query_string={**OURS, "continue": "page-2"}
    ).respond_with_json({"items": [second]})
    statuses = backend.workload_statuses(
        namespace="acme-research", workloads={"training-1": "Job", "training-2": "Job"}
    )
    assert [statuses[name].phase for name in ("training-1", "training-2")] == [
        Phase.RUNNING,
        Phase.SUCCEEDED,
    ]


def test_a_kind_that_carries_no_workload_status_is_refused_before_any_call(backend):
    with pytest.raises(ClusterError, match="Service is not a workload kind"):
        backend.workload_statuses(namespace="acme-research", workloads={"web": "Service"})
