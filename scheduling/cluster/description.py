"""Reading a cluster description file (deploy/clusters/*.yaml): GPU classes, pools with their
nodes as GPU Feature Discovery would label them, and priority tiers."""

from dataclasses import dataclass
from pathlib import Path

import yaml

from .specs import NodeInventory

MIB_PER_GIB = 1024


@dataclass(frozen=True)
class ClusterDescription:
    gpu_classes: list[dict]
    pools: list[dict]
    tiers: list[dict]
    nodes: list[NodeInventory]


def _expand_nodes(pool: dict, gpu_memory_gib: int | None) -> list[NodeInventory]:
    """The nodes of a pool as the cluster reports them: GPU nodes labeled by GPU Feature
    Discovery, CPU nodes (a pool without a GPU class) without any GPU; every node carries the
    labels of its pool (set by whoever added it to the pool)."""
    template = pool["nodes"]
    per_rack = template.get("per_rack", template["count"])
    nodes = []
    for index in range(1, template["count"] + 1):
        fields = {"index": index, "rack": (index - 1) // per_rack + 1}
        labels = {"kubernetes.io/hostname": template["name"].format(**fields)}
        allocatable = {"cpu": str(template["cpu"]), "memory": f"{template['memory_gib']}Gi"}
        if gpu_memory_gib is not None:
            labels |= {
                "nvidia.com/gpu.product": template["product"],
                "nvidia.com/gpu.count": str(template["gpus"]),
                "nvidia.com/gpu.memory": str(gpu_memory_gib * MIB_PER_GIB),
                "nvidia.com/mig.strategy": "mixed" if template.get("mig") else "none",
            }
            allocatable["nvidia.com/gpu"] = str(template["gpus"])
        labels.update({k: str(v).format(**fields) for k, v in template.get("topology", {}).items()})
        labels.update(pool.get("labels", {}))
        for profile, count in template.get("mig", {}).items():
            labels[f"nvidia.com/{profile}.count"] = str(count)
            allocatable[f"nvidia.com/{profile}"] = str(count)
        nodes.append(
            NodeInventory(
                name=labels["kubernetes.io/hostname"], labels=labels, allocatable=allocatable
            )
        )
    return nodes


def cluster_description_load(path: Path) -> ClusterDescription:
    data = yaml.safe_load(Path(path).read_text())
    memory = {c["name"]: c["memory_gib"] for c in data["gpu_classes"]}
    nodes = [
        node
        for pool in data["pools"]
        for node in _expand_nodes(
            pool, memory[pool["gpu_class"]] if pool.get("gpu_class") else None
        )
    ]
    return ClusterDescription(
        gpu_classes=data["gpu_classes"], pools=data["pools"], tiers=data["tiers"], nodes=nodes
    )
