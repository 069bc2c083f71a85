"""Several clusters behind one portal: the description file's clusters and their pools, and one
simulated backend per cluster, each with its own objects and nodes."""

from pathlib import Path

import pytest
from django.conf import settings
from django.core.exceptions import ValidationError

from scheduling import services
from scheduling.backends import backend_for, kubeconfig_file
from scheduling.cluster.description import DEFAULT_CLUSTER
from scheduling.models import Cluster, NodePool

pytestmark = pytest.mark.django_db

DEMO = Path(settings.PORTAL_SIMULATED_CLUSTER)
BURST = DEMO.parent / "burst.yaml"

NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "acme-ai-dev"}}


@pytest.fixture
def clusters(db):
    services.cluster_description_apply(path=DEMO)
    return {cluster.name: cluster for cluster in Cluster.objects.all()}


def test_the_demo_describes_two_simulated_clusters_in_their_regions(clusters):
    assert {(c.name, c.region, c.backend) for c in clusters.values()} == {
        ("eu-west", "eu-west", "simulated"),
        ("us-east", "us-east", "simulated"),
    }


def test_each_described_pool_belongs_to_its_cluster(clusters):
    pools = dict(NodePool.objects.values_list("name", "cluster__name"))
    assert pools == {
        "dgx-h100": "eu-west",
        "a100-mig": "us-east",
        "l4-inference": "us-east",
        "cpu": "us-east",
    }


def test_a_file_without_clusters_describes_the_default_cluster():
    services.cluster_description_apply(path=BURST)
    assert set(NodePool.objects.values_list("cluster__name", flat=True)) == {DEFAULT_CLUSTER}


def test_a_clusters_backend_reports_only_its_own_nodes(clusters):
    names = {node.name for node in backend_for(clusters["eu-west"]).list_nodes()}
    assert names == {f"dgx-h100-{index:02d}" for index in range(1, 9)}


def test_an_object_applied_in_one_simulated_cluster_is_absent_from_the_other(clusters):
    backend_for(clusters["eu-west"]).apply(NAMESPACE)
    us_east = backend_for(clusters["us-east"])
    assert us_east.store.objects(namespaces=[""], names=["acme-ai-dev"]) == []


def test_the_same_object_applied_in_both_clusters_is_kept_once_in_each(clusters):
    for cluster in clusters.values():
        backend_for(cluster).apply(NAMESPACE)
    for cluster in clusters.values():
        [kept] = backend_for(cluster).store.objects(namespaces=[""], names=["acme-ai-dev"])
        assert kept.kind == "Namespace"


def test_a_node_failed_in_one_cluster_leaves_the_others_state_alone(clusters):
    backend_for(clusters["us-east"]).node_fail(name="l4-01")
    assert backend_for(clusters["eu-west"]).store.node_states() == {}
    assert not next(
        n for n in backend_for(clusters["us-east"]).list_nodes() if n.name == "l4-01"
    ).ready


def test_a_kubeconfig_reference_to_an_environment_variable_names_the_file_it_holds(monkeypatch):
    monkeypatch.setenv("EU_WEST_KUBECONFIG", "/secrets/eu-west/kubeconfig")
    assert kubeconfig_file("env:EU_WEST_KUBECONFIG") == "/secrets/eu-west/kubeconfig"


def test_a_kubeconfig_reference_to_an_unset_variable_is_refused(monkeypatch):
    monkeypatch.delenv("EU_WEST_KUBECONFIG", raising=False)
    with pytest.raises(ValueError, match="EU_WEST_KUBECONFIG"):
        kubeconfig_file("env:EU_WEST_KUBECONFIG")


def test_an_empty_kubeconfig_reference_means_the_in_cluster_configuration():
    assert kubeconfig_file("") is None


@pytest.mark.parametrize("reference", ["apiVersion: v1", "relative/kubeconfig", "env:1BAD"])
def test_a_kubeconfig_that_is_no_reference_is_refused_by_validation(reference):
    cluster = Cluster(name="lab", region="lab", backend="kubernetes", kubeconfig=reference)
    with pytest.raises(ValidationError, match="kubeconfig"):
        cluster.full_clean()


def test_the_migrations_empty_default_cluster_is_retired_once_described_clusters_hold_pools():
    # A demo database from before several clusters: migration 0029 put its pools in `default`.
    default = Cluster.objects.create(
        name=DEFAULT_CLUSTER, region=DEFAULT_CLUSTER, backend="simulated"
    )
    NodePool.objects.create(name="dgx-h100", cluster=default, purpose="training")
    services.cluster_description_apply(path=DEMO)
    assert set(Cluster.objects.values_list("name", flat=True)) == {"eu-west", "us-east"}


def test_a_default_cluster_that_still_has_pools_is_kept(clusters):
    default = Cluster.objects.create(name=DEFAULT_CLUSTER, region="lab", backend="kubernetes")
    NodePool.objects.create(name="lab-pool", cluster=default, purpose="dev")
    services.cluster_description_apply(path=DEMO)
    assert Cluster.objects.filter(name=DEFAULT_CLUSTER).exists()
