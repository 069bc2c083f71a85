"""Clusters are placed across as pools are, with two rules of their own: a workload never spans
clusters (a gang stays in one), and a workload pinned to a region runs only there."""

from .builders import admitted, cycle, node, reason, request


def nodes_of(decisions, request_id):
    admission = next(a for a in decisions.admissions if a.request_id == request_id)
    return [p.node for p in admission.placements]


def in_cluster(name, cluster, region=None, **fields):
    return node(name, cluster=cluster, region=region or cluster, **fields)


def test_a_gang_that_fits_only_across_two_clusters_is_not_placed():
    nodes = [in_cluster("eu-1", "eu-west", gpus=4), in_cluster("us-1", "us-east", gpus=4)]
    decisions = cycle(nodes=nodes, pending=[request("gang", gpus=4, replicas=2)])
    assert admitted(decisions) == []


def test_a_gang_is_placed_whole_in_the_one_cluster_it_fits():
    nodes = [
        in_cluster("eu-1", "eu-west", gpus=4),
        in_cluster("us-1", "us-east", gpus=4),
        in_cluster("us-2", "us-east", gpus=4),
    ]
    decisions = cycle(nodes=nodes, pending=[request("gang", gpus=4, replicas=2)])
    assert sorted(nodes_of(decisions, "gang")) == ["us-1", "us-2"]


def test_racks_of_the_same_name_in_two_clusters_are_two_racks():
    nodes = [
        in_cluster("eu-1", "eu-west", gpus=4, topology={"rack": "r1"}),
        in_cluster("us-1", "us-east", gpus=4, topology={"rack": "r1"}),
    ]
    decisions = cycle(
        nodes=nodes, pending=[request("gang", gpus=4, replicas=2, required_topology="rack")]
    )
    assert admitted(decisions) == []


def test_a_workload_pinned_to_a_region_runs_there():
    nodes = [in_cluster("eu-1", "eu-west"), in_cluster("us-1", "us-east")]
    decisions = cycle(nodes=nodes, pending=[request("train", gpus=8, region="us-east")])
    assert nodes_of(decisions, "train") == ["us-1"]


def test_a_workload_pinned_to_a_full_region_waits_though_another_has_room():
    nodes = [in_cluster("eu-1", "eu-west"), in_cluster("us-1", "us-east", free=[0] * 8)]
    decisions = cycle(nodes=nodes, pending=[request("train", gpus=8, region="us-east")])
    assert reason(decisions, "train").message == (
        "H100-80GB: 0 H100-80GB free on eligible nodes, 8 H100-80GB needed per replica."
    )
