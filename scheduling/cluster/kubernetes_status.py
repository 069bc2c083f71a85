"""Reading the API server's objects: a Node as inventory, a Job, Deployment or Pod as the
status of a workload, and the signs that a pod's node was lost."""

from collections.abc import Mapping

from .specs import NODE_LOST, NodeInventory, Phase, TaintSpec, WorkloadStatus


def node_inventory(node: Mapping) -> NodeInventory:
    metadata, spec, status = node["metadata"], node.get("spec") or {}, node.get("status") or {}
    return NodeInventory(
        name=metadata["name"],
        labels=dict(metadata.get("labels") or {}),
        allocatable=dict(status.get("allocatable") or {}),
        taints=tuple(
            TaintSpec(key=taint["key"], value=taint.get("value", ""), effect=taint["effect"])
            for taint in spec.get("taints") or []
        ),
        unschedulable=bool(spec.get("unschedulable", False)),
        ready=_condition(status, "Ready") is not None,
    )


def _condition(status: Mapping, kind: str) -> Mapping | None:
    for condition in status.get("conditions") or []:
        if condition.get("type") == kind and condition.get("status") == "True":
            return condition
    return None


def _job_status(job: Mapping, nodes: tuple[str, ...]) -> WorkloadStatus:
    status = job.get("status") or {}
    ready = status.get("ready", 0)
    if status.get("succeeded", 0) >= (job.get("spec") or {}).get("completions", 1):
        return WorkloadStatus(phase=Phase.SUCCEEDED, nodes=nodes)
    failed = _condition(status, "Failed")
    if failed is not None:
        return WorkloadStatus(
            phase=Phase.FAILED,
            reason=failed.get("reason", ""),
            message=failed.get("message", ""),
            nodes=nodes,
        )
    phase = Phase.RUNNING if status.get("active", 0) > 0 else Phase.PENDING
    return WorkloadStatus(phase=phase, ready_replicas=ready, nodes=nodes)


def _deployment_status(deployment: Mapping, nodes: tuple[str, ...]) -> WorkloadStatus:
    status = deployment.get("status") or {}
    ready = status.get("readyReplicas", 0)
    if ready >= 1:
        return WorkloadStatus(phase=Phase.RUNNING, ready_replicas=ready, nodes=nodes)
    # Why no replica is ready yet (e.g. ProgressDeadlineExceeded), for the user to read.
    stalled = next((c for c in status.get("conditions") or [] if c.get("status") == "False"), {})
    return WorkloadStatus(
        phase=Phase.PENDING,
        reason=stalled.get("reason", ""),
        message=stalled.get("message", ""),
        nodes=nodes,
    )


def _pod_status(pod: Mapping, nodes: tuple[str, ...]) -> WorkloadStatus:
    status = pod.get("status") or {}
    phase = status.get("phase", "Pending")
    reason, message = status.get("reason", ""), status.get("message", "")
    for container in status.get("containerStatuses") or []:
        waiting = (container.get("state") or {}).get("waiting")
        if waiting and not reason:  # ImagePullBackOff, CrashLoopBackOff: what users look for
            reason, message = waiting.get("reason", ""), waiting.get("message", "")
    known = phase in {"Pending", "Running", "Succeeded", "Failed"}
    return WorkloadStatus(
        # Unknown: the node stopped reporting; the pod's node list lets the portal see that.
        phase=Phase(phase) if known else Phase.PENDING,
        reason=reason or ("" if known else phase),
        message=message,
        ready_replicas=1 if _condition(status, "Ready") else 0,
        nodes=nodes,
    )


def node_of(pod: Mapping) -> str:
    return (pod.get("spec") or {}).get("nodeName") or ""


def is_live(pod: Mapping) -> bool:
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def was_lost(pod: Mapping) -> bool:
    """The control plane gave up on the pod's node: its kubelet stopped reporting (phase
    Unknown), the node controller deleted the pod (reason NodeLost), or a NoExecute taint such
    as node.kubernetes.io/unreachable evicted it."""
    status = pod.get("status") or {}
    evicted = _condition(status, "DisruptionTarget")
    return (
        status.get("phase") == "Unknown"
        or status.get("reason") == NODE_LOST
        or (evicted is not None and evicted.get("reason") == "DeletionByTaintManager")
    )


STATUS_READERS = {"Job": _job_status, "Deployment": _deployment_status, "Pod": _pod_status}


def workload_status_of(kind: str, workload: Mapping | None, pods: list[Mapping]) -> WorkloadStatus:
    """The status of a workload from its Job, Deployment or Pod (None: it is gone) and the pods
    that carry its label, with the nodes its live pods are on. Pods on a lost node fail it
    with reason NodeLost, whatever its Job says: the portal requeues it whole."""
    if workload is None:
        return WorkloadStatus(phase=Phase.MISSING)
    nodes = tuple(sorted({node_of(pod) for pod in pods if node_of(pod) and is_live(pod)}))
    status = STATUS_READERS[kind](workload, nodes)
    lost = sorted({node_of(pod) for pod in pods if node_of(pod) and was_lost(pod)})
    if lost and status.phase != Phase.SUCCEEDED:
        what = "stopped responding or evicted the pods"
        return WorkloadStatus.node_lost(lost, what=what, nodes=nodes)
    return status
