"""Inventory and provisioning against the simulated cluster."""

import pytest

from scheduling import services
from scheduling.models import (
    GpuClass,
    Node,
    ProvisioningRecord,
    QuotaGrant,
    SimulatedNodeState,
    SimulatedObject,
)
from tenants.permissions import Caller

pytestmark = pytest.mark.django_db


def test_the_demo_inventory_lands_every_node_in_its_pool(cluster):
    pools = dict(Node.objects.values_list("name", "pool__name"))
    assert len(pools) == 16
    assert (pools["dgx-h100-01"], pools["a100-01"], pools["l4-01"], pools["cpu-01"]) == (
        "dgx-h100",
        "a100-mig",
        "l4-inference",
        "cpu",
    )


def test_the_inventory_reads_mig_layout_and_topology_from_the_labels(cluster):
    a100, h100 = Node.objects.get(name="a100-01"), Node.objects.get(name="dgx-h100-05")
    assert a100.mig_layout == {"mig-1g.10gb": 14, "mig-3g.40gb": 4}
    assert h100.topology == {"nvlink-domain": "dgx-h100-05", "rack": "rack-2", "block": "block-a"}


def test_a_node_the_cluster_stops_reporting_ready_is_marked_not_ready(cluster):
    cluster.node_fail(name="l4-02")
    lost = services.inventory_sync(backend=cluster)
    assert lost == []  # nothing ran there
    assert not Node.objects.get(name="l4-02").ready


def test_provisioning_a_project_creates_its_namespace_objects(cluster, quotas, ai_dev):
    record = services.project_provision(project_id=ai_dev.pk, backend=cluster)
    kinds = set(
        SimulatedObject.objects.filter(name__in=["acme-ai-dev"]).values_list("kind", flat=True)
    ) | set(SimulatedObject.objects.filter(namespace="acme-ai-dev").values_list("kind", flat=True))
    assert record.state == ProvisioningRecord.State.READY
    assert {"Namespace", "ResourceQuota", "LimitRange", "NetworkPolicy", "RoleBinding"} <= kinds


def test_the_namespace_quota_follows_the_organizations_gpu_limits(cluster, quotas, ai_dev):
    services.project_provision(project_id=ai_dev.pk, backend=cluster)
    quota = SimulatedObject.objects.get(
        cluster="us-east", kind="ResourceQuota", namespace="acme-ai-dev"
    )
    hard = quota.manifest["spec"]["hard"]
    assert hard["requests.nvidia.com/gpu"] == "88"  # 64 H100 + 8 A100 + 16 L4


def test_the_namespace_quota_counts_mig_instances_by_the_profiles_grant(cluster, acme, ai_dev):
    a100 = GpuClass.objects.get(name="A100-80GB")
    QuotaGrant.objects.create(organization=acme, gpu_class=a100, guarantee=2, limit=4)
    QuotaGrant.objects.create(
        organization=acme,
        gpu_class=a100,
        resource="mig",
        mig_profile="mig-1g.10gb",
        guarantee=4,
        limit=6,
    )
    services.project_provision(project_id=ai_dev.pk, backend=cluster)
    hard = SimulatedObject.objects.get(
        cluster="eu-west", kind="ResourceQuota", namespace="acme-ai-dev"
    ).manifest["spec"]["hard"]
    assert (
        hard["requests.nvidia.com/gpu"],
        hard["requests.nvidia.com/mig-1g.10gb"],
        hard["requests.nvidia.com/mig-3g.40gb"],
        hard["requests.nvidia.com/gpu.shared"],
    ) == ("4", "6", "0", "0")


def test_provisioning_twice_changes_nothing(cluster, quotas, ai_dev):
    services.project_provision(project_id=ai_dev.pk, backend=cluster)
    before = list(SimulatedObject.objects.order_by("pk").values_list("pk", "manifest"))
    services.project_provision(project_id=ai_dev.pk, backend=cluster)
    assert list(SimulatedObject.objects.order_by("pk").values_list("pk", "manifest")) == before


def test_a_project_is_provisioned_in_every_cluster(cluster, quotas, ai_dev):
    services.project_provision(project_id=ai_dev.pk, backend=cluster)
    namespaces = SimulatedObject.objects.filter(kind="Namespace", name="acme-ai-dev")
    assert set(namespaces.values_list("cluster", flat=True)) == {"eu-west", "us-east"}


def test_cluster_provisioning_labels_and_taints_every_gpu_node(cluster):
    services.cluster_provision(backend=cluster)
    state = SimulatedNodeState.objects.get(name="l4-03")
    assert state.labels["gpu-type"] == "L4"
    assert state.labels["workload"] == "inference"
    assert state.taints == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]


def test_cluster_provisioning_creates_a_priority_class_per_tier(cluster):
    services.cluster_provision(backend=cluster)
    names = set(SimulatedObject.objects.filter(kind="PriorityClass").values_list("name", flat=True))
    assert names == {"inference-prod", "training", "batch", "dev"}


def test_deleting_a_project_stops_its_workloads_and_removes_its_namespace(
    cluster, submit, cycle, ai_dev, alice
):
    from tenants import services as tenant_services

    services.project_provision(project_id=ai_dev.pk, backend=cluster)
    workload = submit()
    cycle()
    tenant_services.project_delete(caller=Caller(user=alice), project=ai_dev)
    record = services.project_deprovision(project_id=ai_dev.pk, backend=cluster)
    workload.refresh_from_db()
    assert workload.state == "Cancelled"
    assert record.state == ProvisioningRecord.State.REMOVED
    assert not SimulatedObject.objects.filter(namespace="acme-ai-dev").exists()
    assert not SimulatedObject.objects.filter(kind="Namespace", name="acme-ai-dev").exists()


def test_the_manifests_dry_run_lists_tiers_nodes_and_namespaces(cluster, quotas, ai_dev):
    kinds = [m["kind"] for m in services.cluster_manifests()]
    assert kinds.count("PriorityClass") == 4
    assert kinds.count("Node") == 16
    assert kinds.count("Namespace") == 1


def test_the_inventory_requeues_gangs_on_a_node_it_lost(cluster, submit, cycle):
    workload = submit()
    cycle()
    node = workload.placements.get().node.name
    cluster.node_fail(name=node)
    assert services.inventory_sync(backend=cluster) == [node]
    workload.refresh_from_db()
    assert workload.state == "Pending"
