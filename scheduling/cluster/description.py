"""Reading a cluster description file (deploy/clusters/*.yaml): GPU classes, the simulated
clusters with their pools and the pools' nodes as GPU Feature Discovery would label them, and
priority tiers. A file lists its clusters under `clusters:` (each a name, a region and pools);
one with `pools:` at the top describes one cluster, named `default`."""

from dataclasses import dataclass
from pathlib import Path

import yaml

from .specs import NodeInventory

MIB_PER_GIB = 1024


# The name and region of the one cluster a file without `clusters:` describes: the cluster a
# deployment had before there were several (migration 0029 files its pools there).
DEFAULT_CLUSTER = "default"


@dataclass(frozen=True)
class ClusterSection:
    """One simulated cluster of a description: its pools and their nodes."""

    name: str
    region: str
    pools: list[dict]
    nodes: list[NodeInventory]


@dataclass(frozen=True)
class ClusterDescription:
    gpu_classes: list[dict]
    clusters: list[ClusterSection]
    tiers: list[dict]

    @property
    def nodes(self) -> list[NodeInventory]:
        return [node for cluster in self.clusters for node in cluster.nodes]

    def nodes_of(self, cluster: str | None) -> list[NodeInventory]:
        """The nodes of the named cluster; of every cluster for None."""
        if cluster is None:
            return self.nodes
        return [
            node for section in self.clusters if section.name == cluster for node in section.nodes
        ]


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
    described = data.get("clusters") or [
        {"name": DEFAULT_CLUSTER, "region": DEFAULT_CLUSTER, "pools": data["pools"]}
    ]
    clusters = [
        ClusterSection(
            name=cluster["name"],
            region=cluster["region"],
            pools=cluster["pools"],
            nodes=[
                node
                for pool in cluster["pools"]
                for node in _expand_nodes(
                    pool, memory[pool["gpu_class"]] if pool.get("gpu_class") else None
                )
            ],
        )
        for cluster in described
    ]
    return ClusterDescription(
        gpu_classes=data["gpu_classes"], clusters=clusters, tiers=data["tiers"]
    )
