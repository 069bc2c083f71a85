"""fgd_cpu_waste_demand: the expected waste of a gap against the demand still to come."""

import numpy as np
import pytest

from scheduling.engine import NodeState, TaskType
from scheduling.engine.free_capacity import ClusterState, Demand
from scheduling.engine.placement import place_replica
from scheduling.engine.policies import PLACEMENT_POLICIES, make_policy
from scheduling.engine.policies.demand_waste import (
    DemandWastePolicy,
    RecomputedWasteTables,
    demand_waste_curve,
)

SIZES = np.array([320, 470])
MIX = (
    (TaskType(cpu_milli=1000, gpus=1, gpu_milli=470), 0.4),
    (TaskType(cpu_milli=1000, gpus=1, gpu_milli=320), 0.2),
    (TaskType(cpu_milli=1000, gpus=1, gpu_milli=1000), 0.4),
)


def node(name, free, cpu=64_000):
    return NodeState(
        name=name,
        pool="dgx",
        gpu_class="H100-80GB",
        gpu_free_milli=tuple(free),
        cpu_free_milli=cpu,
        memory_free_mib=1_000_000,
    )


def no_gaps():
    return np.zeros(1001, dtype=np.int64)


def test_the_policy_is_registered():
    assert "fgd_cpu_waste_demand" in PLACEMENT_POLICIES
    assert isinstance(make_policy(name="fgd_cpu_waste_demand", workload=MIX), DemandWastePolicy)


def test_with_nothing_to_come_every_gap_stays_idle_and_a_whole_gpu_wastes_nothing():
    curve = demand_waste_curve(sizes=SIZES, expected=np.zeros(2), gaps=no_gaps())
    assert curve[530] == 530 and curve[1] == 1 and curve[1000] == 0


def test_with_plenty_to_come_a_gap_takes_the_shares_that_fit_in_proportion():
    curve = demand_waste_curve(sizes=SIZES, expected=np.array([100.0, 200.0]), gaps=no_gaps())
    # 530 takes a 470 (twice as many to come, ends at 60) or a 320 (ends at 210); no share
    # fits 60 or 210, so they stay idle.
    assert curve[530] == pytest.approx((2 * 60 + 210) / 3)
    assert curve[300] == 300


def test_a_gap_among_many_of_its_size_is_unlikely_to_be_filled():
    crowded = no_gaps()
    crowded[530] = 999
    alone = demand_waste_curve(sizes=SIZES, expected=np.array([5.0, 10.0]), gaps=no_gaps())
    among_many = demand_waste_curve(sizes=SIZES, expected=np.array([5.0, 10.0]), gaps=crowded)
    assert among_many[530] == pytest.approx(530 - 15 / 1000 * (530 - (2 * 60 + 210) / 3))
    assert alone[530] < among_many[530]


def test_smaller_gaps_take_the_shares_first():
    gaps = no_gaps()
    gaps[350] = 10  # the ten 320s still to come all go there
    curve = demand_waste_curve(sizes=SIZES, expected=np.array([10.0, 0.0]), gaps=gaps)
    assert curve[700] == 700
    assert curve[350] == pytest.approx(350 - 10 / 11 * 320)


def test_the_waste_is_recomputed_for_a_new_curve_as_if_computed_afresh():
    tasks, _ = zip(*MIX, strict=True)
    first = demand_waste_curve(sizes=SIZES, expected=np.array([100.0, 200.0]), gaps=no_gaps())
    second = demand_waste_curve(sizes=SIZES, expected=np.zeros(2), gaps=no_gaps())
    kept = RecomputedWasteTables(
        tasks=tasks, class_names=["H100-80GB"], waste_curve=first, share_cpu=4000
    )
    fresh = RecomputedWasteTables(
        tasks=tasks, class_names=["H100-80GB"], waste_curve=second, share_cpu=4000
    )
    keys = [(0, 4000, (530, 800)), (0, 64000, (0, 190, 1000, 1000)), (0, 0, (1000,))]
    rows = [kept.row(key) for key in keys]
    kept.flush()
    kept.set_curve(second)
    fresh_rows = [fresh.row(key) for key in keys]
    fresh.flush()
    assert kept.waste[rows] == pytest.approx(fresh.waste[fresh_rows])


def test_a_gpu_past_the_cpu_reach_of_shares_counts_its_free_milli_more():
    tasks, _ = zip(*MIX, strict=True)
    curve = demand_waste_curve(sizes=SIZES, expected=np.array([100.0, 200.0]), gaps=no_gaps())
    tables = RecomputedWasteTables(
        tasks=tasks, class_names=["H100-80GB"], waste_curve=curve, share_cpu=4000
    )
    # 4 cores reach one share: the freest GPU keeps W, the other adds half its milli W leaves.
    row = tables.row((0, 4000, (530, 800)))
    tables.flush()
    assert tables.waste[row] == pytest.approx(curve[800] + curve[530] + 0.5 * (530 - curve[530]))


def test_a_share_fills_a_gap_when_little_is_still_to_come():
    # The cluster is almost full: a 470 goes to the GPU left with 530 rather than open the
    # idle GPU, whose leftover would wait for shares that are not coming.
    nodes = [node("a", [1000] + [0] * 7), node("b", [530] + [0] * 7)]
    cluster = ClusterState(nodes)
    policy = make_policy(name="fgd_cpu_waste_demand", workload=MIX)
    placed = place_replica(
        cluster=cluster,
        demand=Demand(cpu_milli=1000, gpus=1, gpu_milli=470),
        among=np.arange(len(cluster)),
        policy=policy,
    )
    assert placed.node == "b" and placed.gpu_indices == (0,)


def test_the_same_input_gives_the_same_placements():
    def run():
        cluster = ClusterState([node(f"n{i}", [1000] * 8) for i in range(4)])
        policy = make_policy(name="fgd_cpu_waste_demand", workload=MIX)
        placed = []
        for i in range(40):
            milli = (470, 320, 1000)[i % 3]
            got = place_replica(
                cluster=cluster,
                demand=Demand(cpu_milli=1000, gpus=1, gpu_milli=milli),
                among=np.arange(len(cluster)),
                policy=policy,
            )
            placed.append(None if got is None else (got.node, got.gpu_indices))
        return placed

    assert run() == run()


def test_the_expected_waste_fades_when_the_cpu_still_to_come_exceeds_the_free_cpu():
    policy = make_policy(name="fgd_cpu_waste_demand", workload=MIX)
    # The mix asks 1 core per task and 0.788 GPU per task on average.
    plenty = ClusterState([node("a", [1000] * 8, cpu=64_000)])
    assert policy.cpu_factor(plenty) == 1.0
    short = ClusterState([node("a", [1000] * 8, cpu=5_000)])
    tasks_to_come = 8000 / (0.4 * 470 + 0.2 * 320 + 0.4 * 1000)
    assert policy.cpu_factor(short) == pytest.approx((5000 / (tasks_to_come * 1000)) ** 2)
