"""Provisioning in each cluster of the demo (eu-west: the DGX H100 pool; us-east: A100, L4 and
CPU pools), each through its own backend, as the per-cluster tasks run it: one record per
project and cluster, in the clusters the organization may use."""

import re
from datetime import timedelta

import pytest

from scheduling import services, tasks
from scheduling.backends import backend_for
from scheduling.cluster import ClusterError
from scheduling.models import (
    Cluster,
    GpuClass,
    ProvisioningRecord,
    QuotaGrant,
    SimulatedClusterState,
    SimulatedObject,
)
from tenants import services as tenant_services
from tenants.permissions import Caller

from ..factories import ProjectFactory

pytestmark = pytest.mark.django_db


def provision(project, name: str) -> ProvisioningRecord | None:
    cluster = Cluster.objects.get(name=name)
    return services.project_provision(
        project_id=project.pk, backend=backend_for(cluster), cluster=cluster
    )


def states(project) -> dict[str, str]:
    return dict(
        ProvisioningRecord.objects.filter(project=project).values_list("cluster__name", "state")
    )


def namespaced_in(namespace: str) -> set[str]:
    return set(
        SimulatedObject.objects.filter(kind="Namespace", name=namespace).values_list(
            "cluster", flat=True
        )
    )


def switched_off(name: str) -> None:
    SimulatedClusterState.objects.create(cluster=name, answering=False)


def h100_grant(organization, *, limit: int, region_limits: dict | None = None) -> None:
    QuotaGrant.objects.create(
        organization=organization,
        gpu_class=GpuClass.objects.get(name="H100-80GB"),
        guarantee=limit,
        limit=limit,
        region_limits=region_limits or {},
    )


def test_a_project_gets_a_record_of_its_own_in_each_cluster(cluster, quotas, ai_dev):
    provision(ai_dev, "eu-west")
    provision(ai_dev, "us-east")
    assert states(ai_dev) == {"eu-west": "ready", "us-east": "ready"}
    assert namespaced_in("acme-ai-dev") == {"eu-west", "us-east"}


def test_a_cluster_that_does_not_answer_leaves_the_other_clusters_record_ready(
    cluster, quotas, ai_dev
):
    switched_off("us-east")
    provision(ai_dev, "eu-west")
    with pytest.raises(ClusterError):
        provision(ai_dev, "us-east")
    records = {r.cluster.name: r for r in ProvisioningRecord.objects.filter(project=ai_dev)}
    assert (records["eu-west"].state, records["us-east"].state) == ("ready", "pending")
    assert records["us-east"].error.startswith("Retrying: Cluster us-east does not answer")


def test_a_later_success_in_one_cluster_does_not_overwrite_the_others_failure(
    cluster, quotas, ai_dev
):
    switched_off("us-east")
    with pytest.raises(ClusterError):
        provision(ai_dev, "us-east")
    tasks.project_provision.on_failure(
        ClusterError("timed out", retryable=True), "task-id", (str(ai_dev.pk), "us-east"), {}, None
    )
    provision(ai_dev, "eu-west")
    assert states(ai_dev) == {"eu-west": "ready", "us-east": "failed"}


def test_giving_up_names_the_cluster_on_that_clusters_record(cluster, quotas, ai_dev):
    tasks.project_provision.on_failure(
        ClusterError("timed out", retryable=True), "task-id", (str(ai_dev.pk), "us-east"), {}, None
    )
    record = ProvisioningRecord.objects.get(project=ai_dev, cluster__name="us-east")
    assert record.error == "Gave up after retries in cluster us-east: timed out"


def test_giving_up_on_a_clusters_own_objects_fails_its_cluster_wide_record(cluster):
    tasks.cluster_provision.on_failure(
        ClusterError("forbidden", status=403), "task-id", ("eu-west",), {}, None
    )
    record = ProvisioningRecord.objects.get(project=None, cluster__name="eu-west")
    assert (record.scope, record.state) == ("cluster", "failed")


def test_provisioning_each_cluster_again_changes_nothing(cluster, quotas, ai_dev):
    for name in ("eu-west", "us-east"):
        provision(ai_dev, name)
    before = list(SimulatedObject.objects.order_by("pk").values_list("pk", "manifest"))
    for name in ("eu-west", "us-east"):
        provision(ai_dev, name)
    assert list(SimulatedObject.objects.order_by("pk").values_list("pk", "manifest")) == before
    assert ProvisioningRecord.objects.filter(project=ai_dev).count() == 2


def test_cluster_wide_provisioning_keeps_a_record_per_cluster(cluster):
    for name in ("eu-west", "us-east"):
        one = Cluster.objects.get(name=name)
        services.cluster_provision(backend=backend_for(one), cluster=one)
    records = ProvisioningRecord.objects.filter(project=None)
    assert set(records.values_list("cluster__name", "state")) == {
        ("eu-west", "ready"),
        ("us-east", "ready"),
    }


def test_a_cluster_whose_pools_the_organization_may_not_use_does_not_get_its_projects(
    cluster, globex
):
    web = ProjectFactory(organization=globex, slug="web")
    # globex has no H100 quota; eu-west has nothing else. us-east has a CPU pool.
    assert provision(web, "eu-west") is None
    provision(web, "us-east")
    assert namespaced_in("globex-web") == {"us-east"}


def test_a_region_the_organizations_quota_caps_at_nothing_does_not_get_its_projects(
    cluster, globex
):
    h100_grant(globex, limit=8, region_limits={"eu-west": 0})
    web = ProjectFactory(organization=globex, slug="web")
    assert provision(web, "eu-west") is None


def test_a_namespaces_gpu_quota_in_a_region_is_held_to_the_regions_cap(cluster, globex):
    h100_grant(globex, limit=16, region_limits={"eu-west": 8})
    web = ProjectFactory(organization=globex, slug="web")
    provision(web, "eu-west")
    quota = SimulatedObject.objects.get(
        cluster="eu-west", kind="ResourceQuota", namespace="globex-web"
    )
    assert quota.manifest["spec"]["hard"]["requests.nvidia.com/gpu"] == "8"


def test_a_cluster_added_later_gets_every_existing_project(cluster, quotas, ai_dev, tmp_path):
    provision(ai_dev, "eu-west")
    description = tmp_path / "ap-south.yaml"
    description.write_text(AP_SOUTH)
    services.cluster_description_apply(path=description)
    ap_south = Cluster.objects.get(name="ap-south")
    done = services.cluster_reconcile(
        backend=backend_for(ap_south), cluster=ap_south, grace=timedelta(0)
    )
    assert done.provisioned == (str(ai_dev.pk),)
    assert states(ai_dev)["ap-south"] == "ready"
    assert "ap-south" in namespaced_in("acme-ai-dev")


def test_the_reconciler_leaves_a_project_it_provisioned_in_a_cluster_alone(cluster, quotas, ai_dev):
    us_east = Cluster.objects.get(name="us-east")
    provision(ai_dev, "us-east")
    done = services.cluster_reconcile(
        backend=backend_for(us_east), cluster=us_east, grace=timedelta(0)
    )
    assert done.provisioned == ()


def test_deleting_a_project_removes_it_from_each_cluster(cluster, quotas, ai_dev, alice):
    for name in ("eu-west", "us-east"):
        provision(ai_dev, name)
    tenant_services.project_delete(caller=Caller(user=alice), project=ai_dev)
    for name in ("eu-west", "us-east"):
        one = Cluster.objects.get(name=name)
        services.project_deprovision(project_id=ai_dev.pk, backend=backend_for(one), cluster=one)
    assert states(ai_dev) == {"eu-west": "removed", "us-east": "removed"}
    assert namespaced_in("acme-ai-dev") == set()


def test_a_workload_launches_once_its_namespace_is_ready_in_its_own_cluster(
    cluster, quotas, ai_dev, mia
):
    provision(ai_dev, "us-east")
    workload = services.workload_submit(
        caller=Caller(user=mia),
        project=ai_dev,
        request=services.WorkloadRequest(
            name="train",
            kind="training",
            tier="training",
            image="nvcr.io/nvidia/pytorch:25.01-py3",
            gpu_classes=("H100-80GB",),
            gpus=8,
        ),
    )
    services.scheduling_cycle_run()  # placed on an H100 node, in eu-west
    eu_west = Cluster.objects.get(name="eu-west")
    with pytest.raises(ClusterError, match="acme-ai-dev is not provisioned yet"):
        services.workloads_launch(workload_ids=[workload.pk], backend=backend_for(eu_west))
    provision(ai_dev, "eu-west")
    launched = services.workloads_launch(workload_ids=[workload.pk], backend=backend_for(eu_west))
    assert [w.pk for w in launched] == [workload.pk]


AP_SOUTH = """
gpu_classes: []
tiers: []
clusters:
  - name: ap-south
    region: ap-south
    pools:
      - name: cpu-ap-south
        purpose: dev
        nodes:
          count: 1
          name: cpu-ap-{index:02d}
          cpu: 32
          memory_gib: 128
"""


def test_the_project_page_says_where_the_namespace_is_ready_and_where_it_failed(
    cluster, quotas, ai_dev, signed_in, mia
):
    provision(ai_dev, "eu-west")
    tasks.project_provision.on_failure(
        ClusterError("timed out", retryable=True), "task-id", (str(ai_dev.pk), "us-east"), {}, None
    )
    page = signed_in(mia).get("/orgs/acme/projects/ai-dev/workloads/").content.decode()
    shown = re.sub(
        r"<[^>]+>", "", re.search(r'<p class="muted" id="provisioning">.*?</p>', page)[0]
    )
    assert shown == (
        "Namespace: ready in eu-west, failed in us-east:"
        " Gave up after retries in cluster us-east: timed out"
    )
