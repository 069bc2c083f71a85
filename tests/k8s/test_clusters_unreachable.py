"""Two Kubernetes clusters behind one portal, each a local server that answers like its API
server; one is killed mid-run. Past the grace it is unreachable: its running work stops being
metered at the last time it was seen and says why, while the other cluster goes on. When it
answers again its work is followed again, and nothing is launched twice."""

import copy

import pytest
from pytest_httpserver import HTTPServer

from portal import clock
from scheduling import tasks
from scheduling.models import Cluster, GpuClass, Node, Placement, PriorityTier, Workload

from ..factories import ProjectFactory
from .conftest import kubernetes_cluster_add
from .test_backend_nodes import DGX_NODE

pytestmark = pytest.mark.django_db

NODES = "/api/v1/nodes"


def _node(name: str) -> dict:
    node = copy.deepcopy(DGX_NODE)
    node["metadata"]["name"] = name
    node["metadata"]["labels"]["kubernetes.io/hostname"] = name
    return node


@pytest.fixture
def servers(tmp_path, monkeypatch):
    """eu-west and us-east, each a local API server with one DGX node, as clusters."""
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    h100 = GpuClass.objects.create(
        name="H100-80GB", memory_gib=80, products=["NVIDIA-H100-80GB-HBM3"]
    )
    started = {}
    for name in ("eu-west", "us-east"):
        server = HTTPServer()
        server.expect_request(NODES, method="GET").respond_with_json(
            {"kind": "NodeList", "metadata": {}, "items": [_node(f"dgx-{name}")]}
        )
        server.start()
        kubernetes_cluster_add(
            name=name, url=server.url_for("/").rstrip("/"), gpu_class=h100, folder=tmp_path
        )
        started[name] = server
    yield started
    for server in started.values():
        if server.is_running():
            server.stop()


def _running_on(node_name: str, name: str) -> Workload:
    """A workload running on the node, metered from now (as the status sync leaves it)."""
    now = clock.now()
    tier, _ = PriorityTier.objects.get_or_create(name="training", defaults={"value": 500})
    workload = Workload.objects.create(
        project=ProjectFactory(),
        tier=tier,
        name=name,
        kind=Workload.Kind.TRAINING,
        image="nvcr.io/nvidia/pytorch:25.01-py3",
        gpu_classes=["H100-80GB"],
        gpus=8,
        state=Workload.State.RUNNING,
        submitted_at=now,
        admitted_at=now,
        launched_at=now,
        started_at=now,
    )
    Placement.objects.create(
        workload=workload,
        replica=0,
        node=Node.objects.get(name=node_name),
        gpu_indices=list(range(8)),
        started_at=now,
        running_at=now,
    )
    return workload


@pytest.fixture
def running(servers):
    """Both clusters synced and seen; a workload running in each."""
    for name in servers:
        tasks.inventory_sync(name)
    return {name: _running_on(f"dgx-{name}", f"train-{name}") for name in servers}


def _state(name: str) -> str:
    return Cluster.objects.get(name=name).state


def test_both_clusters_answering_are_ready_with_their_nodes(running):
    assert {(c.name, c.state) for c in Cluster.objects.all()} == {
        ("eu-west", "ready"),
        ("us-east", "ready"),
    }
    assert set(Node.objects.values_list("pool__cluster__name", "name")) == {
        ("eu-west", "dgx-eu-west"),
        ("us-east", "dgx-us-east"),
    }


def test_a_cluster_killed_within_the_grace_is_not_yet_unreachable(servers, running):
    servers["eu-west"].stop()
    clock.advance(seconds=60)
    tasks.inventory_sync("eu-west")
    assert _state("eu-west") == "ready"
    assert running["eu-west"].placements.get().ended_at is None


def test_a_cluster_killed_past_the_grace_is_unreachable_and_its_work_is_metered_to_last_seen(
    servers, running
):
    seen = Cluster.objects.get(name="eu-west").last_seen_at
    servers["eu-west"].stop()
    clock.advance(seconds=301)
    tasks.inventory_sync("eu-west")
    tasks.inventory_sync("us-east")
    workload = Workload.objects.get(pk=running["eu-west"].pk)
    assert (_state("eu-west"), _state("us-east")) == ("unreachable", "ready")
    assert workload.placements.get().ended_at == seen
    assert workload.status_reason.startswith("Cluster unreachable")
    assert running["us-east"].placements.get().ended_at is None


def test_an_unreachable_clusters_nodes_take_no_new_work(servers, running):
    from scheduling.specs_from_models import engine_nodes

    servers["eu-west"].stop()
    clock.advance(seconds=301)
    tasks.inventory_sync("eu-west")
    nodes = Node.objects.select_related("pool__gpu_class", "pool__cluster")
    cordoned = {state.name: state.cordoned for state in engine_nodes(nodes, [])}
    assert cordoned == {"dgx-eu-west": True, "dgx-us-east": False}


def test_a_cluster_that_answers_again_is_followed_again_and_nothing_is_launched_twice(
    servers, running
):
    eu_west = servers["eu-west"]
    eu_west.stop()
    clock.advance(seconds=301)
    tasks.inventory_sync("eu-west")
    eu_west.clear_log()
    eu_west.start()
    tasks.inventory_sync("eu-west")
    workload = Workload.objects.get(pk=running["eu-west"].pk)
    reopened = workload.placements.get(ended_at__isnull=True)
    assert _state("eu-west") == "ready"
    assert (workload.state, workload.status_reason) == (Workload.State.RUNNING, "")
    assert reopened.running_at == Cluster.objects.get(name="eu-west").last_seen_at
    assert {request.method for request, _ in eu_west.log} == {"GET"}
