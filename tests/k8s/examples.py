"""Specs of a small GPU cloud: acme's research project, its pools, tiers and workloads."""

from datetime import UTC, datetime

from scheduling.cluster.specs import (
    NodeSpec,
    PoolSpec,
    ProjectSpec,
    TaintSpec,
    TierSpec,
    WorkloadKind,
    WorkloadSpec,
)

GPU_TAINT = TaintSpec(key="nvidia.com/gpu", value="present", effect="NoSchedule")
H100_POOL = PoolSpec(
    name="dgx-h100",
    gpu_class="h100-80gb",
    purpose="training",
    labels={"gpu-cloud.io/fabric": "nvlink"},
    taint=GPU_TAINT,
)
A100_MIG_POOL = PoolSpec(name="a100-mig", gpu_class="a100-80gb", purpose="dev", taint=GPU_TAINT)

PROJECTS = {
    "whole GPUs": ProjectSpec(
        organization="acme",
        project="research",
        namespace="acme-research",
        owner_email="alice@acme.example",
        gpu_quota={"nvidia.com/gpu": 16},
    ),
    "MIG slices": ProjectSpec(
        organization="acme",
        project="notebooks",
        namespace="acme-notebooks",
        owner_email="mia@acme.example",
        gpu_quota={"nvidia.com/gpu": 2, "nvidia.com/mig-1g.10gb": 14, "nvidia.com/mig-3g.40gb": 4},
    ),
    "no GPUs": ProjectSpec(
        organization="globex",
        project="etl",
        namespace="globex-etl",
        owner_email="bruno@globex.example",
    ),
}

TIERS = [
    TierSpec(name="inference-prod", value=100_000, preemptible=False),
    TierSpec(name="training", value=10_000, preemptible=True, description="Gangs and fine-tuning"),
    TierSpec(name="dev", value=100, preemptible=True),
]

NODES = [
    NodeSpec(
        name="dgx-h100-007",
        pool=H100_POOL,
        topology={"topology.kubernetes.io/zone": "eu-west-1a", "gpu-cloud.io/rack": "r12"},
    ),
    NodeSpec(name="l4-001", pool=PoolSpec(name="l4", gpu_class="l4-24gb", purpose="inference")),
]


def workload_spec(kind: WorkloadKind, **overrides) -> WorkloadSpec:
    fields = {
        "id": "8f14e45f-ceea-467f-a0e6-6f3c1a2b9d10",
        "name": f"{kind.value}-42",
        "namespace": "acme-research",
        "kind": kind,
        "organization": "acme",
        "project": "research",
        "owner": "alice.o'hara+gpu@acme.example",
        "tier": "training",
        "image": "nvcr.io/nvidia/pytorch:25.01-py3",
        "command": ("torchrun", "train.py"),
        "env": {"EPOCHS": "3"},
        "gpu_resource": "nvidia.com/gpu",
        "gpu_count": 8,
        "cpu": "32",
        "memory": "256Gi",
        "pool": H100_POOL,
        "max_runtime_seconds": 86_400,
        "expires_at": datetime(2026, 12, 1, 12, 0, tzinfo=UTC),
    }
    return WorkloadSpec(**{**fields, **overrides})


WORKLOADS = {
    "training gang of 4": workload_spec(
        WorkloadKind.TRAINING,
        replicas=4,
        nodes=("dgx-h100-001", "dgx-h100-002", "dgx-h100-003", "dgx-h100-004"),
    ),
    "single-node fine-tuning": workload_spec(WorkloadKind.FINE_TUNING, nodes=("dgx-h100-001",)),
    "training with a two-minute notice": workload_spec(
        WorkloadKind.TRAINING, nodes=("dgx-h100-001",), notice_seconds=120
    ),
    "batch inference on a MIG slice": workload_spec(
        WorkloadKind.BATCH_INFERENCE,
        gpu_resource="nvidia.com/mig-3g.40gb",
        gpu_count=1,
        pool=A100_MIG_POOL,
        max_runtime_seconds=None,
    ),
    "inference service": workload_spec(
        WorkloadKind.INFERENCE,
        tier="inference-prod",
        replicas=2,
        gpu_count=1,
        nodes=("l4-001", "l4-002"),
        expires_at=None,
    ),
    "notebook": workload_spec(
        WorkloadKind.NOTEBOOK, tier="dev", gpu_resource="nvidia.com/mig-1g.10gb", gpu_count=1
    ),
    "CPU-only batch job": workload_spec(
        WorkloadKind.BATCH_INFERENCE, gpu_resource=None, gpu_count=0, pool=None
    ),
}
