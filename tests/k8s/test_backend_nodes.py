"""Node inventory from GPU Feature Discovery labels, and the portal's labels and taints."""

import copy

import pytest

from scheduling.cluster.base import ClusterError
from scheduling.cluster.specs import NodeInventory, TaintSpec

NODES = "/api/v1/nodes"
GPU_TAINT = TaintSpec(key="nvidia.com/gpu", value="present", effect="NoSchedule")

# As `kubectl get node -o json` shows a DGX H100 with NVIDIA's GPU operator (abridged).
DGX_NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": "dgx-h100-007",
        "uid": "6a1f0b8e-4f7e-4b1f-9a57-0c1c2f3e4d5a",
        "resourceVersion": "918273",
        "labels": {
            "kubernetes.io/hostname": "dgx-h100-007",
            "kubernetes.io/os": "linux",
            "topology.kubernetes.io/zone": "eu-west-1a",
            "feature.node.kubernetes.io/pci-10de.present": "true",
            "nvidia.com/cuda.driver.major": "570",
            "nvidia.com/gpu.family": "hopper",
            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
            "nvidia.com/gpu.count": "8",
            "nvidia.com/gpu.memory": "81559",
            "nvidia.com/gpu.present": "true",
            "nvidia.com/mig.capable": "true",
            "nvidia.com/mig.strategy": "single",
        },
        "annotations": {"nfd.node.kubernetes.io/feature-labels": "pci-10de.present"},
    },
    "spec": {
        "podCIDR": "10.244.7.0/24",
        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
    },
    "status": {
        "capacity": {"cpu": "224", "memory": "2113470432Ki", "nvidia.com/gpu": "8", "pods": "110"},
        "allocatable": {
            "cpu": "222",
            "ephemeral-storage": "1717986918400",
            "memory": "2097741792Ki",
            "nvidia.com/gpu": "8",
            "pods": "110",
        },
        "conditions": [
            {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
            {"type": "Ready", "status": "True", "reason": "KubeletReady"},
        ],
        "nodeInfo": {"kubeletVersion": "v1.36.1", "containerRuntimeVersion": "containerd://2.1.0"},
    },
}

# An A100 split into seven 1g.10gb slices (mixed strategy), cordoned and not reporting.
MIG_NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": "a100-mig-002",
        "resourceVersion": "918274",
        "labels": {
            "kubernetes.io/hostname": "a100-mig-002",
            "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
            "nvidia.com/gpu.count": "1",
            "nvidia.com/gpu.memory": "81920",
            "nvidia.com/mig.strategy": "mixed",
            "nvidia.com/mig-1g.10gb.count": "7",
            "nvidia.com/mig-1g.10gb.memory": "9728",
        },
    },
    "spec": {
        "unschedulable": True,
        "taints": [
            {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"},
        ],
    },
    "status": {
        "allocatable": {"cpu": "62", "memory": "515000000Ki", "nvidia.com/mig-1g.10gb": "7"},
        "conditions": [{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown"}],
    },
}


def _node_list(*nodes: dict, next_page: str = "") -> dict:
    metadata = {"resourceVersion": "918300", **({"continue": next_page} if next_page else {})}
    return {"kind": "NodeList", "apiVersion": "v1", "metadata": metadata, "items": list(nodes)}


def test_nodes_are_read_with_their_gpu_feature_discovery_labels_allocatable_and_state(
    api_server, backend
):
    api_server.expect_ordered_request(
        NODES, method="GET", query_string={"limit": "500"}
    ).respond_with_json(_node_list(DGX_NODE, MIG_NODE))
    dgx, mig = backend.list_nodes()
    assert dgx == NodeInventory(
        name="dgx-h100-007",
        labels=DGX_NODE["metadata"]["labels"],
        allocatable=DGX_NODE["status"]["allocatable"],
        taints=(GPU_TAINT,),
        unschedulable=False,
        ready=True,
    )
    assert mig.labels["nvidia.com/mig-1g.10gb.count"] == "7"
    assert mig.allocatable["nvidia.com/mig-1g.10gb"] == "7"
    assert mig.taints[0] == TaintSpec(
        key="node.kubernetes.io/unschedulable", value="", effect="NoSchedule"
    )
    assert (mig.unschedulable, mig.ready) == (True, False)


def test_a_long_node_list_is_read_page_by_page(api_server, backend):
    api_server.expect_ordered_request(
        NODES, method="GET", query_string={"limit": "500"}
    ).respond_with_json(_node_list(DGX_NODE, next_page="page-2"))
    api_server.expect_ordered_request(
        NODES, method="GET", query_string={"limit": "500", "continue": "page-2"}
    ).respond_with_json(_node_list(MIG_NODE))
    assert [node.name for node in backend.list_nodes()] == ["dgx-h100-007", "a100-mig-002"]


def _unlabeled_node() -> dict:
    node = copy.deepcopy(DGX_NODE)
    node["spec"]["taints"] = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]
    return node


POOL_LABELS = {"gpu-type": "h100-80gb", "workload": "training", "gpu-cloud.io/pool": "dgx-h100"}


def test_labeling_a_node_is_one_strategic_merge_patch_that_keeps_others_taints(api_server, backend):
    path = f"{NODES}/dgx-h100-007"
    api_server.expect_ordered_request(path, method="GET").respond_with_json(_unlabeled_node())
    api_server.expect_ordered_request(
        path,
        method="PATCH",
        headers={"Content-Type": "application/strategic-merge-patch+json"},
        json={
            "metadata": {
                "resourceVersion": "918273",
                "labels": POOL_LABELS,
                "annotations": {
                    "gpu-cloud.io/managed-labels": "gpu-cloud.io/pool,gpu-type,workload",
                    "gpu-cloud.io/managed-taints": "nvidia.com/gpu:NoSchedule",
                },
            },
            "spec": {
                "taints": [
                    {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
                    {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                ]
            },
        },
    ).respond_with_json(DGX_NODE)
    backend.label_node(name="dgx-h100-007", labels=POOL_LABELS, taints=(GPU_TAINT,))


def test_labels_and_taints_the_portal_no_longer_wants_are_removed(api_server, backend):
    node = copy.deepcopy(DGX_NODE)
    node["metadata"]["labels"].update(POOL_LABELS, **{"gpu-cloud.io/rack": "r12"})
    node["metadata"]["annotations"].update(
        {
            "gpu-cloud.io/managed-labels": "gpu-cloud.io/pool,gpu-cloud.io/rack,gpu-type,workload",
            "gpu-cloud.io/managed-taints": "nvidia.com/gpu:NoSchedule",
        }
    )
    path = f"{NODES}/dgx-h100-007"
    api_server.expect_ordered_request(path, method="GET").respond_with_json(node)
    api_server.expect_ordered_request(
        path,
        method="PATCH",
        json={
            "metadata": {
                "resourceVersion": "918273",
                "labels": {"gpu-cloud.io/rack": None},
                "annotations": {
                    "gpu-cloud.io/managed-labels": "gpu-cloud.io/pool,gpu-type,workload",
                    "gpu-cloud.io/managed-taints": "",
                },
            },
            "spec": {"taints": []},
        },
    ).respond_with_json(node)
    backend.label_node(name="dgx-h100-007", labels=POOL_LABELS, taints=())


def test_a_node_that_already_carries_the_pools_labels_and_taint_is_not_patched(api_server, backend):
    node = copy.deepcopy(DGX_NODE)
    node["metadata"]["labels"].update(POOL_LABELS)
    node["metadata"]["annotations"].update(
        {
            "gpu-cloud.io/managed-labels": "gpu-cloud.io/pool,gpu-type,workload",
            "gpu-cloud.io/managed-taints": "nvidia.com/gpu:NoSchedule",
        }
    )
    api_server.expect_ordered_request(f"{NODES}/dgx-h100-007", method="GET").respond_with_json(node)
    backend.label_node(name="dgx-h100-007", labels=POOL_LABELS, taints=(GPU_TAINT,))


def test_a_taint_with_an_unknown_effect_never_leaves_the_portal(api_server, backend):
    bad = TaintSpec(key="nvidia.com/gpu", value="present", effect="NoScheduling")
    with pytest.raises(ClusterError, match="effect 'NoScheduling'"):
        backend.label_node(name="dgx-h100-007", labels=POOL_LABELS, taints=(bad,))
    assert api_server.log == []
