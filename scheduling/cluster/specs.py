"""What the portal wants to exist in the cluster, as plain data.

Services build these from the database; `manifests.py` turns them into Kubernetes objects; the
backends apply them. Nothing here touches the database or the network.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

MANAGED_BY = "gpu-cloud-portal"
LABEL_PREFIX = "gpu-cloud.io"


class WorkloadKind(StrEnum):
    TRAINING = "training"
    FINE_TUNING = "fine-tuning"
    BATCH_INFERENCE = "batch-inference"
    INFERENCE = "inference"
    NOTEBOOK = "notebook"


@dataclass(frozen=True)
class TaintSpec:
    key: str
    value: str
    effect: str  # NoSchedule | PreferNoSchedule | NoExecute

    def as_dict(self) -> dict:
        """As a Node's spec.taints entry."""
        return {"key": self.key, "value": self.value, "effect": self.effect}


@dataclass(frozen=True)
class ProjectSpec:
    """One tenant namespace and the guard rails around it."""

    organization: str
    project: str
    namespace: str
    owner_email: str
    # Kubernetes extended resources and the most of each the namespace may request,
    # e.g. {"nvidia.com/gpu": 8, "nvidia.com/mig-1g.10gb": 14}.
    gpu_quota: Mapping[str, int] = field(default_factory=dict)
    max_pods: int = 200
    default_cpu: str = "1"
    default_memory: str = "2Gi"
    max_cpu: str = "128"
    max_memory: str = "1024Gi"


@dataclass(frozen=True)
class TierSpec:
    name: str
    value: int
    preemptible: bool
    description: str = ""


@dataclass(frozen=True)
class PoolSpec:
    name: str
    gpu_class: str  # "" for a CPU pool
    purpose: str  # training | inference | dev
    labels: Mapping[str, str] = field(default_factory=dict)
    taint: TaintSpec | None = None


@dataclass(frozen=True)
class NodeSpec:
    """The labels and taints a node of a pool must carry."""

    name: str
    pool: PoolSpec
    topology: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class WorkloadSpec:
    id: str
    name: str  # DNS-1123 name of the Kubernetes objects
    namespace: str
    kind: WorkloadKind
    organization: str
    project: str
    owner: str
    tier: str
    image: str
    command: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    replicas: int = 1
    # Per replica: one extended resource and its count, e.g. ("nvidia.com/gpu", 4),
    # ("nvidia.com/mig-3g.40gb", 1) or ("nvidia.com/gpu.shared", 1); none for CPU-only work.
    gpu_resource: str | None = None
    gpu_count: int = 0
    cpu: str = "1"
    memory: str = "2Gi"
    pool: PoolSpec | None = None
    nodes: tuple[str, ...] = ()  # the nodes the engine chose
    max_runtime_seconds: int | None = None
    expires_at: datetime | None = None
    port: int = 8000  # inference services listen here
    # Seconds between SIGTERM and SIGKILL when it is stopped (its tier's notice; None:
    # Kubernetes' default).
    notice_seconds: int | None = None


@dataclass(frozen=True)
class NodeInventory:
    """A node as the cluster reports it (labels from NVIDIA GPU Feature Discovery)."""

    name: str
    labels: Mapping[str, str]
    allocatable: Mapping[str, str]
    taints: tuple[TaintSpec, ...] = ()
    unschedulable: bool = False
    ready: bool = True


# The reason of a workload failed because a node it ran on was lost: the portal requeues it.
NODE_LOST = "NodeLost"


class Phase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    MISSING = "Missing"  # the objects are gone (deleted, or never created)


@dataclass(frozen=True)
class WorkloadStatus:
    phase: Phase
    reason: str = ""
    message: str = ""
    ready_replicas: int = 0
    nodes: tuple[str, ...] = ()
    lost_nodes: tuple[str, ...] = ()  # nodes that stopped responding under its pods

    @classmethod
    def node_lost(cls, lost: list[str], *, what: str, nodes: tuple[str, ...]) -> "WorkloadStatus":
        """Failed because its pods' nodes `lost` were lost (`what` they did): the portal
        requeues the whole gang."""
        return cls(
            phase=Phase.FAILED,
            reason=NODE_LOST,
            message=f"Node {', '.join(lost)} {what}.",
            nodes=nodes,
            lost_nodes=tuple(lost),
        )


@dataclass(frozen=True)
class GpuReading:
    """A workload's GPUs as monitoring sees them lately (0-1 each; None: unknown)."""

    utilization: float | None
    memory_used: float | None


@dataclass(frozen=True)
class LogLine:
    """One line a workload's container wrote, when, and in which replica (0-based: a Job's
    completion index, a Deployment's pods in order of creation, a notebook's one pod)."""

    at: datetime
    replica: int
    text: str
