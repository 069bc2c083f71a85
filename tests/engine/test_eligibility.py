"""Which nodes a request may use: pools, labels, taints, affinity, cordons, class order."""

from scheduling.engine import (
    NodeSelectorRequirement,
    PreferredAffinity,
    SelectorOperator,
    Taint,
    TaintEffect,
    Toleration,
    TolerationOperator,
)
from scheduling.engine.eligibility import requirement_matches, tolerates

from .builders import admitted, cycle, node, reason, request

GPU_TAINT = Taint(key="nvidia.com/gpu", value="present", effect=TaintEffect.NO_SCHEDULE)
TOLERATE_GPU = Toleration(key="nvidia.com/gpu", operator=TolerationOperator.EXISTS)


def placed_on(decisions, request_id):
    admission = next(a for a in decisions.admissions if a.request_id == request_id)
    return {p.node for p in admission.placements}


def test_a_no_schedule_taint_keeps_out_a_request_that_does_not_tolerate_it():
    decisions = cycle(nodes=[node("a", taints=(GPU_TAINT,))], pending=[request("job", gpus=1)])
    assert reason(decisions, "job").code == "no_eligible_node"


def test_the_pending_sentence_names_the_untolerated_taint():
    decisions = cycle(nodes=[node("a", taints=(GPU_TAINT,))], pending=[request("job", gpus=1)])
    assert "nvidia.com/gpu=present:NoSchedule" in reason(decisions, "job").message


def test_a_cpu_only_request_kept_out_of_one_node_says_cpu_and_one_node():
    decisions = cycle(
        nodes=[node("a", taints=(GPU_TAINT,))],
        pending=[request("prep", classes=(), cpu_milli=1000)],
        quotas=[],
    )
    assert reason(decisions, "prep").message == (
        "CPU: no eligible node: taint nvidia.com/gpu=present:NoSchedule not tolerated (1 node)."
    )


def test_the_nodes_a_reason_keeps_out_are_counted_in_the_plural():
    nodes = [node(name, taints=(GPU_TAINT,)) for name in ("a", "b")]
    decisions = cycle(nodes=nodes, pending=[request("job", gpus=1)])
    assert reason(decisions, "job").message.endswith("not tolerated (2 nodes).")


def test_a_toleration_lets_a_request_onto_a_tainted_node():
    decisions = cycle(
        nodes=[node("a", taints=(GPU_TAINT,))],
        pending=[request("job", gpus=1, tolerations=(TOLERATE_GPU,))],
    )
    assert admitted(decisions) == ["job"]


def test_a_no_execute_taint_blocks_like_no_schedule():
    taint = Taint(key="maintenance", effect=TaintEffect.NO_EXECUTE)
    decisions = cycle(nodes=[node("a", taints=(taint,))], pending=[request("job", gpus=1)])
    assert reason(decisions, "job").code == "no_eligible_node"


def test_a_prefer_no_schedule_taint_only_steers_away():
    soft = Taint(key="spot", effect=TaintEffect.PREFER_NO_SCHEDULE)
    decisions = cycle(
        nodes=[node("a", taints=(soft,)), node("b")], pending=[request("job", gpus=1)]
    )
    assert placed_on(decisions, "job") == {"b"}


def test_a_prefer_no_schedule_node_is_still_used_when_it_is_the_only_one():
    soft = Taint(key="spot", effect=TaintEffect.PREFER_NO_SCHEDULE)
    decisions = cycle(nodes=[node("a", taints=(soft,))], pending=[request("job", gpus=1)])
    assert admitted(decisions) == ["job"]


def test_an_empty_exists_toleration_tolerates_every_taint():
    taint = Taint(key="anything", value="x", effect=TaintEffect.NO_EXECUTE)
    assert tolerates(toleration=Toleration(operator=TolerationOperator.EXISTS), taint=taint)


def test_an_equal_toleration_needs_the_same_value():
    taint = Taint(key="team", value="red")
    assert not tolerates(toleration=Toleration(key="team", value="blue"), taint=taint)


def test_a_toleration_for_another_effect_does_not_tolerate():
    taint = Taint(key="team", value="red", effect=TaintEffect.NO_EXECUTE)
    toleration = Toleration(key="team", value="red", effect=TaintEffect.NO_SCHEDULE)
    assert not tolerates(toleration=toleration, taint=taint)


def requirement(operator, *values, key="zone"):
    return NodeSelectorRequirement(key=key, operator=operator, values=values)


def test_in_matches_a_listed_value():
    assert requirement_matches(
        requirement=requirement(SelectorOperator.IN, "a", "b"), labels={"zone": "b"}
    )


def test_not_in_matches_a_missing_label():
    assert requirement_matches(requirement=requirement(SelectorOperator.NOT_IN, "a"), labels={})


def test_exists_does_not_match_a_missing_label():
    assert not requirement_matches(requirement=requirement(SelectorOperator.EXISTS), labels={})


def test_does_not_exist_matches_a_missing_label():
    assert requirement_matches(requirement=requirement(SelectorOperator.DOES_NOT_EXIST), labels={})


def test_gt_compares_as_integers():
    gt = requirement(SelectorOperator.GT, "9", key="cuda")
    assert requirement_matches(requirement=gt, labels={"cuda": "12"})


def test_lt_never_matches_a_non_integer_label():
    lt = requirement(SelectorOperator.LT, "9", key="cuda")
    assert not requirement_matches(requirement=lt, labels={"cuda": "twelve"})


def test_required_affinity_keeps_a_request_off_non_matching_nodes():
    decisions = cycle(
        nodes=[node("a", labels={"zone": "west"}), node("b", labels={"zone": "east"})],
        pending=[
            request("job", gpus=1, required_affinity=(requirement(SelectorOperator.IN, "east"),))
        ],
    )
    assert placed_on(decisions, "job") == {"b"}


def test_preferred_affinity_wins_over_the_placement_policy():
    prefer_west = PreferredAffinity(
        weight=10, requirements=(requirement(SelectorOperator.IN, "west"),)
    )
    decisions = cycle(
        nodes=[node("a", labels={"zone": "east"}), node("b", labels={"zone": "west"})],
        pending=[request("job", gpus=1, preferred_affinity=(prefer_west,))],
    )
    assert placed_on(decisions, "job") == {"b"}


def test_a_cordoned_node_takes_no_new_work():
    decisions = cycle(nodes=[node("a", cordoned=True)], pending=[request("job", gpus=1)])
    assert "cordoned" in reason(decisions, "job").message


def test_a_request_only_uses_the_pools_it_names():
    decisions = cycle(
        nodes=[node("a", pool="train"), node("b", pool="serve")],
        pending=[request("job", gpus=1, pools=("serve",))],
    )
    assert placed_on(decisions, "job") == {"b"}


def test_the_first_acceptable_gpu_class_that_fits_wins():
    decisions = cycle(
        nodes=[node("h", gpu_class="H100-80GB"), node("a", gpu_class="A100-80GB")],
        pending=[request("job", gpus=1, classes=("A100-80GB", "H100-80GB"))],
    )
    assert decisions.admissions[0].gpu_class == "A100-80GB"


def test_the_next_class_is_used_when_the_first_is_full():
    decisions = cycle(
        nodes=[node("h", gpu_class="H100-80GB"), node("a", gpu_class="A100-80GB", free=[0] * 8)],
        pending=[request("job", gpus=1, classes=("A100-80GB", "H100-80GB"))],
    )
    assert decisions.admissions[0].gpu_class == "H100-80GB"


def test_anti_affinity_puts_one_replica_per_node():
    decisions = cycle(
        nodes=[node("a"), node("b"), node("c")],
        pending=[request("svc", gpus=1, replicas=3, anti_affinity=True)],
    )
    assert placed_on(decisions, "svc") == {"a", "b", "c"}


def test_anti_affinity_leaves_a_gang_pending_when_there_are_too_few_nodes():
    decisions = cycle(
        nodes=[node("a"), node("b")],
        pending=[request("svc", gpus=1, replicas=3, anti_affinity=True)],
    )
    assert reason(decisions, "svc").code == "gang"


def test_cpu_only_work_avoids_tainted_gpu_nodes():
    decisions = cycle(
        nodes=[node("gpu", taints=(GPU_TAINT,)), node("cpu", gpus=0, gpu_class="none")],
        pending=[request("etl", cpu_milli=4000)],
    )
    assert placed_on(decisions, "etl") == {"cpu"}
