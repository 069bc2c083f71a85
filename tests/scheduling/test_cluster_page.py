"""Operators' cluster page: each pool's free against schedulable capacity in words, and its
nodes GPU by GPU with the tenant that holds each; tenants get a 403."""

import re

import pytest

from scheduling.models import Cluster, Node, Placement, Workload
from scheduling.selectors import cluster_overview
from tenants.permissions import Caller

from ..factories import UserFactory

pytestmark = pytest.mark.django_db

URL = "/staff/cluster/"


def staff() -> Caller:
    return Caller(user=UserFactory(is_staff=True))


def one_gpu_held_on_each_dgx(submit):
    """A workload of acme's holding GPU 0 of each of the 8 DGX nodes."""
    workload = submit(name="spread")
    for replica, node in enumerate(Node.objects.filter(pool__name="dgx-h100").order_by("name")):
        Placement.objects.create(
            workload=workload,
            replica=replica,
            node=node,
            gpu_indices=[0],
            gpu_milli=1000,
            started_at=workload.submitted_at,
        )


def test_a_fragmented_pool_is_told_in_words(operator_client, submit, cluster):
    one_gpu_held_on_each_dgx(submit)
    page = operator_client.get(URL).content.decode()
    assert "56 GPUs idle, but no 8-GPU job fits" in page


def test_an_idle_pool_says_every_gpu_is_usable(operator_client, cluster):
    page = operator_client.get(URL).content.decode()
    assert "64 GPUs idle, every one usable by the largest jobs" in page


def test_a_held_gpu_names_its_tenant_and_tier(operator_client, submit, cluster):
    one_gpu_held_on_each_dgx(submit)
    page = operator_client.get(URL).content.decode()
    assert 'title="GPU 0: acme (training), 1000 milli-GPU"' in page


def test_a_tenant_may_not_see_the_cluster(client, alice, cluster):
    client.force_login(alice)
    assert client.get(URL).status_code == 403


def test_a_size_no_node_could_hold_is_not_called_fragmentation(operator_client, cluster):
    page = operator_client.get(URL).content.decode()
    assert "16 GPUs idle, every one usable by the largest jobs" in page  # 4 L4 nodes of 4


def test_the_queue_across_tenants_shows_each_waiting_workload_with_why(
    operator_client, submit, cluster
):
    submit(name="waits")
    Workload.objects.filter(name="waits").update(
        pending_message="H100-80GB: 64 of 64 in use by acme", queue_position=1
    )
    page = operator_client.get(URL).content.decode()
    assert ("acme/ai-dev/waits" in page, "H100-80GB: 64 of 64 in use by acme" in page) == (
        True,
        True,
    )


def test_a_held_gpu_is_lettered_by_its_tier_with_a_legend(operator_client, submit, cluster):
    one_gpu_held_on_each_dgx(submit)
    page = operator_client.get(URL).content.decode()
    assert ('milli-GPU">T</span>' in page, "<strong>T</strong> training" in page) == (True, True)


def test_each_node_says_how_many_of_its_gpus_are_used(operator_client, submit, cluster):
    one_gpu_held_on_each_dgx(submit)
    page = operator_client.get(URL).content.decode()
    assert page.count('<span class="muted nowrap">1/8 used</span>') == 8


def one_mig_instance_held_on_a100_01(submit, profile="mig-1g.10gb", count=2):
    """A notebook of acme's holding ``count`` instances of ``profile`` on a100-01."""
    workload = submit(
        name="mig-notebook",
        kind="notebook",
        tier="dev",
        gpu_classes=("A100-80GB",),
        gpus=0,
        mig_profile=profile,
        mig_count=count,
    )
    Placement.objects.create(
        workload=workload,
        replica=0,
        node=Node.objects.get(name="a100-01"),
        mig_profile=profile,
        mig_count=count,
        started_at=workload.submitted_at,
    )


def test_the_overview_counts_the_mig_instances_each_node_holds(submit, cluster):
    one_mig_instance_held_on_a100_01(submit)
    [pool] = [p for p in cluster_overview(caller=staff()) if p.mig]
    a100_01 = Node.objects.get(name="a100-01")
    uses = {use.profile: (use.used, len(use.instances)) for use in pool.mig[a100_01.pk]}
    assert uses == {"mig-1g.10gb": (2, 14), "mig-3g.40gb": (0, 4)}


def test_a_node_says_how_many_of_its_mig_instances_are_used(operator_client, submit, cluster):
    one_mig_instance_held_on_a100_01(submit)
    page = operator_client.get(URL).content.decode()
    assert '<span class="muted nowrap">2/14 mig-1g.10gb used</span>' in page


def test_a_held_mig_instance_names_its_tenant_and_tier(operator_client, submit, cluster):
    one_mig_instance_held_on_a100_01(submit)
    page = operator_client.get(URL).content.decode()
    assert 'title="mig-1g.10gb instance 1: acme (dev)">D</span>' in page


def test_the_pool_totals_its_mig_instances_in_use(operator_client, submit, cluster):
    one_mig_instance_held_on_a100_01(submit)
    page = operator_client.get(URL).content.decode()
    assert "MIG instances in use: 2/28 mig-1g.10gb, 0/8 mig-3g.40gb." in page


def test_the_overview_counts_no_cordoned_gpus_as_idle(cluster):
    Node.objects.filter(name="dgx-h100-01").update(cordoned=True)
    [dgx] = [p for p in cluster_overview(caller=staff()) if p.capacity.pool == "dgx-h100"]
    assert (dgx.capacity.gpus_idle_schedulable, dgx.capacity.gpus_idle) == (56, 64)


def test_a_cordoned_nodes_idle_gpus_are_not_called_fragmentation(operator_client, cluster):
    Node.objects.filter(name="dgx-h100-01").update(cordoned=True)
    page = operator_client.get(URL).content.decode()
    assert (
        "56 GPUs idle (8 more idle on cordoned nodes), every one usable by the largest jobs" in page
    )


def test_the_cluster_page_reads_in_a_fixed_number_of_queries(
    operator_client, submit, cluster, django_assert_num_queries
):
    one_gpu_held_on_each_dgx(submit)
    for n in range(3):
        submit(name=f"waits-{n}")
    with django_assert_num_queries(9):
        operator_client.get(URL)


def test_the_cluster_page_lists_each_cluster_with_its_region_and_state(operator_client, cluster):
    Cluster.objects.filter(name="us-east").update(state=Cluster.State.UNREACHABLE)
    page = operator_client.get(URL).content.decode()
    assert re.search(r"<td>eu-west</td><td>eu-west</td><td>Simulated</td><td>.*Ready", page)
    assert re.search(r"<td>us-east</td><td>us-east</td><td>Simulated</td><td>.*Unreachable", page)


def test_the_cluster_page_shows_each_clusters_pools_under_it(operator_client, cluster):
    page = operator_client.get(URL).content.decode()
    eu_west, us_east = page.index('id="cluster-eu-west"'), page.index('id="cluster-us-east"')
    assert eu_west < page.index("dgx-h100 <span") < us_east < page.index("l4-inference <span")
