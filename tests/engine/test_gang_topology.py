"""Gangs start whole or not at all; they prefer one node, then one rack, then one block."""

from .builders import admitted, cycle, node, reason, request


def nodes_of(decisions, request_id):
    admission = next(a for a in decisions.admissions if a.request_id == request_id)
    return [p.node for p in admission.placements]


def racked(name, rack, block="b1", **fields):
    return node(name, topology={"rack": rack, "block": block}, **fields)


def test_a_gang_that_does_not_fit_whole_places_no_replica():
    decisions = cycle(nodes=[node("a", gpus=4)], pending=[request("gang", gpus=2, replicas=3)])
    assert decisions.admissions == ()


def test_a_gang_whose_gpus_are_free_but_split_is_explained_with_the_replicas_that_fit():
    split = [1000, 1000, 1000, 0]  # 6 free in all, room for one replica of 2 per node
    decisions = cycle(
        nodes=[node("a", gpus=4, free=split), node("b", gpus=4, free=split)],
        pending=[request("gang", gpus=2, replicas=3)],
    )
    waiting = reason(decisions, "gang")
    assert (waiting.code, waiting.message) == (
        "gang",
        "H100-80GB: only 2 of 3 replicas fit at once (6 H100-80GB free); a gang starts whole"
        " or not at all.",
    )


def test_a_gang_needing_more_gpus_than_are_free_waits_for_capacity_not_for_its_shape():
    decisions = cycle(
        nodes=[node("a"), node("b", free=[1000, 1000] + [0] * 6)],
        pending=[request("gang", gpus=8, replicas=2)],
    )
    waiting = reason(decisions, "gang")
    assert (waiting.code, waiting.message) == (
        "capacity",
        "H100-80GB: 10 H100-80GB free on eligible nodes, 16 H100-80GB needed for 2 replicas.",
    )


def test_an_elastic_gang_starts_with_at_least_its_minimum():
    decisions = cycle(
        nodes=[node("a", gpus=4)], pending=[request("gang", gpus=2, replicas=3, min_replicas=2)]
    )
    assert len(nodes_of(decisions, "gang")) == 2


def test_a_gang_that_fits_on_one_node_uses_one_node():
    decisions = cycle(
        nodes=[racked("a", "r1", gpus=4), racked("b", "r1", gpus=8)],
        pending=[request("gang", gpus=2, replicas=4)],
    )
    assert set(nodes_of(decisions, "gang")) == {"b"}


def test_a_gang_too_big_for_a_node_stays_in_one_rack():
    decisions = cycle(
        nodes=[
            racked("a1", "r1", gpus=4),
            racked("b1", "r2", gpus=4),
            racked("b2", "r2", gpus=4),
        ],
        pending=[request("gang", gpus=4, replicas=2)],
    )
    assert set(nodes_of(decisions, "gang")) == {"b1", "b2"}


def test_a_gang_too_big_for_a_rack_stays_in_one_block():
    decisions = cycle(
        nodes=[
            racked("a1", "r1", block="x", gpus=4),
            racked("c1", "r2", block="y", gpus=4),
            racked("c2", "r3", block="y", gpus=4),
        ],
        pending=[request("gang", gpus=4, replicas=2)],
    )
    assert set(nodes_of(decisions, "gang")) == {"c1", "c2"}


def test_a_required_level_keeps_a_gang_pending_rather_than_spread():
    decisions = cycle(
        nodes=[racked("a1", "r1", gpus=4), racked("b1", "r2", gpus=4)],
        pending=[request("gang", gpus=4, replicas=2, required_topology="rack")],
    )
    assert reason(decisions, "gang").code == "topology"


def test_without_a_required_level_a_gang_spreads_over_racks_when_it_must():
    decisions = cycle(
        nodes=[racked("a1", "r1", gpus=4), racked("b1", "r2", gpus=4)],
        pending=[request("gang", gpus=4, replicas=2)],
    )
    assert admitted(decisions) == ["gang"]


def test_the_smallest_rack_that_fits_is_chosen():
    decisions = cycle(
        nodes=[
            racked("big1", "r1", gpus=4),
            racked("big2", "r1", gpus=4),
            racked("big3", "r1", gpus=4),
            racked("small1", "r2", gpus=4),
            racked("small2", "r2", gpus=4),
        ],
        pending=[request("gang", gpus=4, replicas=2)],
    )
    assert set(nodes_of(decisions, "gang")) == {"small1", "small2"}
