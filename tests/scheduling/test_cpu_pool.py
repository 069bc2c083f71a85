"""CPU-only work: the demo cluster's CPU pool runs it, GPU work never lands there, and where no
node of the cluster could ever take it, it is refused at submission (or, queued before the
CPU nodes went, waits as never_fits with the reason)."""

import pytest
from django.core.exceptions import ValidationError

from scheduling.models import Node, NodePool, Placement, SimulatedObject, Workload

pytestmark = pytest.mark.django_db

CPU_ONLY = {
    "kind": "notebook",
    "tier": "dev",
    "image": "jupyter/scipy-notebook:latest",
    "gpu_classes": (),
    "gpus": 0,
    "cpu_milli": 4000,
    "memory_mib": 16384,
}


def test_the_demo_cluster_has_a_cpu_pool_without_gpus_or_taint(cluster):
    pool = NodePool.objects.get(name="cpu")
    nodes = Node.objects.filter(pool=pool)
    assert (pool.gpu_class, pool.taint_key) == (None, "")
    assert nodes.count() == 2
    assert set(nodes.values_list("gpu_count", flat=True)) == {0}


def test_a_cpu_only_workload_is_admitted_and_runs_on_the_cpu_pool(submit, cycle, advance):
    workload = submit(name="data-prep", **CPU_ONLY)
    cycle()
    advance(10)
    workload.refresh_from_db()
    [placement] = Placement.objects.filter(workload=workload)
    assert workload.state == Workload.State.RUNNING
    assert placement.node.pool.name == "cpu"


def test_a_cpu_only_pod_selects_the_cpu_pool_and_tolerates_no_gpu_taint(submit, cycle):
    workload = submit(name="data-prep", **CPU_ONLY)
    cycle()
    pod = SimulatedObject.objects.get(kind="Pod", name=workload.name).manifest["spec"]
    assert pod["nodeSelector"] == {"gpu-cloud.io/pool": "cpu"}
    assert "tolerations" not in pod
    assert "nvidia.com/gpu" not in pod["containers"][0]["resources"]["limits"]


def test_gpu_work_never_lands_on_the_cpu_pool(submit, cycle):
    workloads = [
        submit(name=f"l4-{n}", kind="inference", gpu_classes=("L4",), gpus=1) for n in range(6)
    ]
    cycle()
    pools = set(
        Placement.objects.filter(workload__in=workloads).values_list("node__pool__name", flat=True)
    )
    assert pools == {"l4-inference"}


def test_a_cpu_only_workload_is_refused_when_no_node_is_a_cpu_node(submit, cluster):
    Node.objects.filter(pool__name="cpu").delete()
    with pytest.raises(ValidationError) as refused:
        submit(name="data-prep", **CPU_ONLY)
    [message] = refused.value.message_dict["gpus"]
    assert "No node of the cluster takes work without GPUs" in message
    assert "nvidia.com/gpu=present:NoSchedule" in message


def test_a_cpu_only_workload_queued_before_the_cpu_nodes_were_cordoned_waits_as_never_fits(
    submit, cycle
):
    workload = submit(name="data-prep", **CPU_ONLY)
    Node.objects.filter(pool__name="cpu").update(cordoned=True)
    cycle()
    workload.refresh_from_db()
    assert (workload.state, workload.pending_code) == (Workload.State.PENDING, "never_fits")
    assert "work without GPUs" in workload.pending_message


def test_a_cpu_only_submission_is_a_400_naming_gpus_without_a_cpu_node(
    cluster, quotas, api_as, mia, ai_dev
):
    Node.objects.filter(pool__name="cpu").delete()
    body = {**CPU_ONLY, "name": "data-prep", "gpu_classes": []}
    url = f"/api/v1/organizations/acme/projects/{ai_dev.slug}/workloads/"
    response = api_as(mia).post(url, body, format="json")
    assert response.status_code == 400
    assert "No node of the cluster takes work without GPUs" in str(response.json())


def test_the_cluster_page_shows_the_cpu_pool_as_one(operator_client, cluster):
    page = operator_client.get("/staff/cluster/").content.decode()
    assert "A CPU pool of 2 nodes without GPUs, for CPU-only work" in page
