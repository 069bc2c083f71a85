"""Placement policies choose the node (and GPU) the paper's simulator would."""

import numpy as np
import pytest

from scheduling.engine import TaskType
from scheduling.engine.free_capacity import ClusterState, Demand
from scheduling.engine.placement import place_replica
from scheduling.engine.policies import PLACEMENT_POLICIES, make_policy
from scheduling.engine.policies.cpu_aware import StateTables, waste_curve

from .builders import node

SHARE = Demand(cpu_milli=1000, gpus=1, gpu_milli=500)
WHOLE = Demand(cpu_milli=1000, gpus=1, gpu_milli=1000)
MIX = ((TaskType(cpu_milli=1000, gpus=1, gpu_milli=500), 0.5), (TaskType(1000, 1, 1000), 0.5))


def place(nodes, demand, policy="bestfit", **kwargs):
    cluster = ClusterState(nodes)
    chosen = make_policy(name=policy, **{"workload": MIX, **kwargs})
    placement = place_replica(
        cluster=cluster, demand=demand, among=np.arange(len(cluster)), policy=chosen
    )
    return placement


def test_bestfit_fills_the_node_left_with_the_least_free():
    nodes = [node("a", free=[1000] * 4), node("b", free=[1000, 0, 0, 0])]
    assert place(nodes, WHOLE).node == "b"


def test_bestfit_puts_a_share_on_the_fullest_gpu_it_fits():
    assert place([node("a", free=[1000, 600, 700])], SHARE).gpu_indices == (1,)


def test_packing_prefers_a_partly_used_gpu_over_an_idle_one():
    nodes = [node("a", free=[1000] * 2), node("b", free=[1000, 800])]
    assert place(nodes, SHARE, policy="packing").node == "b"


def test_clustering_groups_replicas_of_the_same_shape():
    cluster = ClusterState([node("a", gpus=4), node("b", gpus=4)])
    policy = make_policy(name="clustering")
    everywhere = np.arange(2)
    place_replica(cluster=cluster, demand=SHARE, among=np.array([1]), policy=policy)
    second = place_replica(cluster=cluster, demand=SHARE, among=everywhere, policy=policy)
    assert second.node == "b"


def test_dotprod_prefers_the_node_whose_free_resources_align_least():
    nodes = [node("a", free=[1000] * 8), node("b", free=[1000] * 2)]
    assert place(nodes, WHOLE, policy="dotprod").node == "b"


def test_fgd_keeps_whole_gpus_whole_when_a_share_fits_a_used_gpu():
    nodes = [node("a", free=[1000, 1000]), node("b", free=[1000, 500])]
    assert (
        place(nodes, SHARE, policy="fgd").node,
        place(nodes, SHARE, policy="fgd").gpu_indices,
    ) == (
        "b",
        (1,),
    )


def test_equal_scores_go_to_the_smallest_node_name():
    nodes = [node("b", gpus=2), node("a", gpus=2)]
    assert place(nodes, WHOLE, policy="fgd").node == "a"


def test_fgd_small_first_breaks_ties_towards_nodes_with_fewer_gpus():
    nodes = [node("a", gpus=8), node("b", gpus=2)]
    assert place(nodes, WHOLE, policy="fgd_small_first").node == "b"


def test_fgd_used_first_breaks_ties_towards_a_node_already_in_use():
    nodes = [node("a", free=[1000] * 4), node("b", free=[0, 1000, 1000, 1000])]
    assert place(nodes, WHOLE, policy="fgd_used_first").node == "b"


def test_fgd_used_first_puts_cpu_only_work_next_to_the_fewest_idle_gpus():
    nodes = [node("a", free=[0, 1000, 1000, 1000]), node("b", free=[0, 0, 0, 1000])]
    assert place(nodes, Demand(cpu_milli=1000), policy="fgd_used_first").node == "b"


def test_fgd_used_first_breaks_ties_of_a_share_towards_nodes_with_fewer_gpus():
    nodes = [node("a", free=[0] + [1000] * 7), node("b", free=[0, 1000])]
    assert place(nodes, SHARE, policy="fgd_used_first").node == "b"


def test_fgd_keep_scarce_spares_the_only_node_a_rare_type_fits():
    whole_node = ((TaskType(cpu_milli=120_000, gpus=8, gpu_milli=1000), 0.01),)
    nodes = [node("a", cpu=128_000), node("b", cpu=96_000)]
    assert place(nodes, WHOLE, policy="fgd_used_first").node == "a"
    assert place(nodes, WHOLE, policy="fgd_keep_scarce", rare_workload=whole_node).node == "b"


def test_fgd_keep_scarce_prefers_a_node_in_use_even_if_a_rare_type_loses_it():
    seven_gpus = ((TaskType(cpu_milli=120_000, gpus=7, gpu_milli=1000), 0.01),)
    nodes = [node("b", cpu=128_000, free=[0] + [1000] * 7), node("a", cpu=96_000)]
    assert place(nodes, WHOLE, policy="fgd_keep_scarce", rare_workload=seven_gpus).node == "b"


def test_random_is_the_same_for_the_same_seed():
    nodes = [node(f"n{i}", gpus=2) for i in range(20)]
    assert place(nodes, WHOLE, policy="random", seed=7) == place(
        nodes, WHOLE, policy="random", seed=7
    )


def test_random_differs_between_seeds():
    nodes = [node(f"n{i}", gpus=2) for i in range(50)]
    picks = {place(nodes, WHOLE, policy="random", seed=s).node for s in range(5)}
    assert len(picks) > 1


@pytest.mark.parametrize("policy", PLACEMENT_POLICIES)
def test_every_policy_returns_none_when_nothing_fits(policy):
    assert place([node("a", free=[300])], SHARE, policy=policy) is None


def test_an_unknown_policy_name_is_refused():
    with pytest.raises(ValueError, match="unknown placement policy"):
        make_policy(name="fastest")


def test_in_a_cycle_fgd_keep_scarce_keeps_the_only_host_of_a_rare_request_free():
    from .builders import admitted, cycle, request

    # Only "a" has CPU for the rare request; it is 1 of 25 requests, outside FGD's target.
    nodes = [node("a", cpu=128_000), *(node(n, cpu=96_000) for n in "bcd")]
    small = [
        request(f"small-{i}", gpus=1, cpu_milli=4000, submitted_minutes_ago=60 - i)
        for i in range(24)
    ]
    rare = request("rare", gpus=8, cpu_milli=120_000, submitted_minutes_ago=1)
    decisions = cycle(nodes=nodes, pending=[*small, rare], placement="fgd_keep_scarce")
    assert "rare" in admitted(decisions)


SHARE_4_CORES = ((TaskType(cpu_milli=4000, gpus=1, gpu_milli=500), 1.0),)


def test_fgd_cpu_reach_keeps_the_cpu_that_idle_gpus_need_for_shares():
    nodes = [node("a", gpus=4, cpu=20_000), node("b", gpus=4, cpu=40_000)]
    heavy = Demand(cpu_milli=16_000, gpus=1, gpu_milli=1000)
    assert place(nodes, heavy, policy="fgd_used_first", workload=SHARE_4_CORES).node == "a"
    assert place(nodes, heavy, policy="fgd_cpu_reach", workload=SHARE_4_CORES).node == "b"


def test_fgd_cpu_reach_puts_a_share_on_a_used_gpu_it_fits():
    nodes = [node("a", free=[1000, 1000]), node("b", free=[1000, 500])]
    placed = place(nodes, SHARE, policy="fgd_cpu_reach")
    assert (placed.node, placed.gpu_indices) == ("b", (1,))


def test_fgd_cpu_reach_breaks_ties_towards_a_node_already_in_use():
    nodes = [node("a", free=[1000] * 4), node("b", free=[0, 1000, 1000, 1000])]
    assert place(nodes, WHOLE, policy="fgd_cpu_reach").node == "b"


EIGHT_GPUS_120_CORES = ((TaskType(cpu_milli=120_000, gpus=8, gpu_milli=1000), 0.01),)


def test_fgd_cpu_keep_hosts_spares_the_last_host_of_a_rare_type():
    # "a" is the only one of 17 nodes with CPU for the rare type.
    nodes = [node("a", cpu=128_000), *(node(f"n{i:02d}", cpu=96_000) for i in range(16))]
    assert place(nodes, WHOLE, policy="fgd_cpu_reach").node == "a"
    kept = place(nodes, WHOLE, policy="fgd_cpu_keep_hosts", rare_workload=EIGHT_GPUS_120_CORES)
    assert kept.node != "a"


def test_fgd_cpu_keep_hosts_still_uses_the_last_host_when_nothing_else_fits():
    nodes = [node("a", cpu=128_000), *(node(f"n{i:02d}", free=[0] * 8) for i in range(16))]
    kept = place(nodes, WHOLE, policy="fgd_cpu_keep_hosts", rare_workload=EIGHT_GPUS_120_CORES)
    assert kept.node == "a"


SHARES_470_320 = (
    (TaskType(cpu_milli=1000, gpus=1, gpu_milli=470), 0.4),
    (TaskType(cpu_milli=1000, gpus=1, gpu_milli=320), 0.2),
    (TaskType(cpu_milli=1000, gpus=1, gpu_milli=1000), 0.4),
)
SHARE_320 = Demand(cpu_milli=1000, gpus=1, gpu_milli=320)


def test_fgd_cpu_waste_reach_leaves_the_gap_a_popular_share_fills():
    # 530 free would end at 210, which no share fits; 680 at 360, which a 320 fits.
    nodes = [node("a", free=[530]), node("b", free=[680])]
    assert place(nodes, SHARE_320, policy="fgd_cpu_keep_hosts", workload=SHARES_470_320).node == "a"
    assert (
        place(nodes, SHARE_320, policy="fgd_cpu_waste_reach", workload=SHARES_470_320).node == "b"
    )


def test_fgd_cpu_waste_reach_puts_a_share_on_the_gpu_whose_leftover_fills_best():
    placed = place(
        [node("a", free=[530, 680])],
        SHARE_320,
        policy="fgd_cpu_waste_reach",
        workload=SHARES_470_320,
    )
    assert placed.gpu_indices == (1,)


def test_waste_curve_counts_a_gap_no_share_fits_as_idle_for_good():
    tasks, weights = zip(*SHARES_470_320, strict=True)
    curve = waste_curve(tasks=tasks, weights=np.array(weights), competition=0.05)
    assert curve[300] == 300


def test_waste_curve_expects_the_shares_that_fit_to_fill_a_gap():
    tasks, weights = zip(*SHARES_470_320, strict=True)
    curve = waste_curve(tasks=tasks, weights=np.array(weights), competition=0.0)
    # 530 takes a 470 (twice as popular, ends at 60) or a 320 (ends at 210).
    assert curve[530] == pytest.approx((2 * 60 + 210) / 3)


def test_waste_curve_counts_a_whole_gpu_as_no_waste():
    tasks, weights = zip(*SHARES_470_320, strict=True)
    assert waste_curve(tasks=tasks, weights=np.array(weights), competition=0.05)[1000] == 0


def test_expected_waste_counts_a_gpu_past_the_cpu_reach_of_shares_as_idle_for_good():
    tasks, weights = zip(*SHARES_470_320, strict=True)
    curve = waste_curve(tasks=tasks, weights=np.array(weights), competition=0.05)
    tables = StateTables(tasks=tasks, class_names=["H100-80GB"], waste_curve=curve, share_cpu=4000)
    # 4 cores reach one share: the freest GPU keeps its expected waste, the other is lost.
    row = tables.row((0, 4000, (530, 800)))
    tables.flush()
    assert tables.waste[row] == pytest.approx(curve[800] + 530)
