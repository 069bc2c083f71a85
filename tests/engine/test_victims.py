"""The victim set: the cheapest by (highest tier, GPU-seconds lost, count), whatever the names."""

from itertools import combinations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduling.engine.free_capacity import ClusterState, Demand
from scheduling.engine.gang import GangShape, place_gang, topology_domains
from scheduling.engine.policies import make_policy
from scheduling.engine.victims import Victim, choose_victims

from .builders import NOW, cycle, node, on, request, running


def victims_for_four_gpus(*workloads):
    decisions = cycle(
        nodes=[node("a", free=[0] * 8)],
        pending=[request("urgent", gpus=4, tier=5)],
        running=list(workloads),
    )
    return sorted(p.victim_id for p in decisions.preemptions)


def test_one_victim_is_evicted_where_two_cheaper_ones_would_lose_more_work_together():
    # Each small one loses 2 GPUs x 30 min, less than the big one's 4 GPUs x 20 min,
    # but both together lose more.
    assert victims_for_four_gpus(
        running(request("big", gpus=4), on("a", 0, 1, 2, 3), started_minutes_ago=20),
        running(request("small-1", gpus=2), on("a", 4, 5), started_minutes_ago=30),
        running(request("small-2", gpus=2), on("a", 6, 7), started_minutes_ago=30),
    ) == ["big"]


def test_equally_cheap_victims_are_chosen_by_what_they_hold_not_by_their_ids():
    chosen = []
    for first, second in (("x", "y"), ("y", "x")):
        held = {first: (0, 1, 2, 3), second: (4, 5, 6, 7)}
        victims = victims_for_four_gpus(
            *(running(request(name, gpus=4), on("a", *gpus)) for name, gpus in held.items())
        )
        chosen.append([held[v] for v in victims])
    assert chosen == [[(0, 1, 2, 3)], [(0, 1, 2, 3)]]


def test_the_highest_tier_among_the_victims_outweighs_the_work_they_lose():
    assert victims_for_four_gpus(
        running(request("old-1", gpus=2, tier=1), on("a", 0, 1), started_minutes_ago=600),
        running(request("old-2", gpus=2, tier=1), on("a", 2, 3), started_minutes_ago=600),
        running(request("fresh", gpus=4, tier=2), on("a", 4, 5, 6, 7), started_minutes_ago=1),
    ) == ["old-1", "old-2"]


def test_the_work_lost_outweighs_the_number_of_victims():
    assert victims_for_four_gpus(
        running(request("old", gpus=4), on("a", 0, 1, 2, 3), started_minutes_ago=600),
        running(request("fresh-1", gpus=2), on("a", 4, 5), started_minutes_ago=5),
        running(request("fresh-2", gpus=2), on("a", 6, 7), started_minutes_ago=5),
    ) == ["fresh-1", "fresh-2"]


# -- against brute force, on small random clusters -----------------------------------------


@st.composite
def small_clusters(draw):
    """Up to three 4-GPU nodes in two racks, partly held by up to seven running workloads
    (whole GPUs or shares, some over two nodes), and a gang to make room for."""
    count = draw(st.integers(1, 3))
    cluster = ClusterState(
        [node(f"n{i}", gpus=4, topology={"rack": f"r{i // 2}"}) for i in range(count)]
    )
    workloads = []
    for j in range(draw(st.integers(1, 7))):
        shared = draw(st.booleans())
        demand = (
            Demand(gpus=1, gpu_milli=draw(st.sampled_from((250, 500))))
            if shared
            else Demand(gpus=draw(st.integers(1, 3)), gpu_milli=1000)
        )
        placements = []
        for _ in range(draw(st.integers(1, 2))):
            at = draw(st.integers(0, count - 1))
            if not cluster.replica_capacity(demand=demand, among=np.array([at]))[0]:
                break
            gpus = cluster.best_fit_gpus(demand=demand, node=at)
            placements.append(cluster.allocate(node=at, demand=demand, gpu_indices=gpus))
        else:
            work = request(
                f"w{j}",
                tier=draw(st.integers(0, 1)),
                gpus=0 if shared else demand.gpus,
                gpu_milli=demand.gpu_milli if shared else 0,
                replicas=len(placements),
            )
            minutes = draw(st.sampled_from((0, 10, 30)))
            workloads.append(running(work, *placements, started_minutes_ago=minutes))
            continue
        for placement in placements:
            cluster.release(placement)
    replicas = draw(st.integers(1, 3))
    shape = GangShape(
        demand=Demand(gpus=draw(st.integers(1, 4)), gpu_milli=1000)
        if draw(st.booleans())
        else Demand(gpus=1, gpu_milli=draw(st.sampled_from((500, 750)))),
        replicas=replicas,
        min_replicas=draw(st.integers(1, replicas)),
        anti_affinity=draw(st.booleans()),
        required_level=draw(st.sampled_from((None, "rack", "hostname"))),
    )
    reasons = st.sampled_from(("priority", "reclaim"))
    return cluster, [Victim(workload=w, reason=draw(reasons)) for w in workloads], shape


def placer(cluster, shape):
    policy = make_policy(name="bestfit")
    domains = topology_domains(cluster=cluster, levels=("rack",))
    everywhere = np.arange(len(cluster))
    return lambda victims: place_gang(
        cluster=cluster, shape=shape, among=everywhere, policy=policy, domains=domains
    )


def cost(victims):
    """Highest tier, then milli-GPU x seconds run, then count: the cost, computed afresh."""
    return (
        max(v.workload.request.tier for v in victims),
        sum(
            v.workload.request.gpu_milli_per_replica
            * len(v.workload.placements)
            * (NOW - v.workload.started_at).total_seconds()
            for v in victims
        ),
        len(victims),
    )


def cheapest_by_brute_force(cluster, candidates, shape):
    place = placer(cluster, shape)
    saved = cluster.checkpoint()
    best = None
    for size in range(1, len(candidates) + 1):
        for subset in combinations(candidates, size):
            for victim in subset:
                for placement in victim.workload.placements:
                    cluster.release(placement)
            if place(subset) is not None and (best is None or cost(subset) < best):
                best = cost(subset)
            cluster.restore(saved)
    return best


def free_state(cluster):
    return cluster.gpu_free.tolist(), cluster.cpu_free.tolist(), cluster.memory_free.tolist()


def search(cluster, candidates, shape):
    return choose_victims(
        cluster=cluster,
        candidates=candidates,
        now=NOW,
        shape=shape,
        among=np.arange(len(cluster)),
        place=placer(cluster, shape),
    )


examples = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings(examples, max_examples=400)
@given(small_clusters())
def test_the_search_finds_a_set_as_cheap_as_the_cheapest_of_all_subsets(drawn):
    cluster, candidates, shape = drawn
    best = cheapest_by_brute_force(cluster, candidates, shape)
    chosen = search(cluster, candidates, shape)
    assert (None if chosen is None else cost(chosen[0])) == best


@examples
@given(small_clusters())
def test_the_cluster_holds_the_gang_on_success_and_is_unchanged_on_failure(drawn):
    cluster, candidates, shape = drawn
    before = cluster.checkpoint()
    expected = free_state(cluster)
    chosen = search(cluster, candidates, shape)
    if chosen is not None:
        after = free_state(cluster)
        cluster.restore(before)
        victims, placements = chosen
        for victim in victims:
            for placement in victim.workload.placements:
                cluster.release(placement)
        for placement in placements:
            at = cluster.index[placement.node]
            cluster.allocate(node=at, demand=shape.demand, gpu_indices=placement.gpu_indices)
        expected = free_state(cluster)
        cluster.restore(before)
    else:
        after = free_state(cluster)
    assert after == expected


@examples
@given(small_clusters(), st.randoms(use_true_random=False))
def test_relabelled_and_reordered_candidates_give_the_same_victims(drawn, rng):
    cluster, candidates, shape = drawn
    before = cluster.checkpoint()
    chosen = search(cluster, candidates, shape)
    cluster.restore(before)
    names = [f"z{i}" for i in range(len(candidates))]
    rng.shuffle(names)
    relabelled = [
        Victim(
            workload=running(
                request(name, tenant=f"t-{name}", **_shape_of(v.workload.request)),
                *v.workload.placements,
                started_minutes_ago=round((NOW - v.workload.started_at).total_seconds() / 60),
            ),
            reason=v.reason,
        )
        for name, v in zip(names, candidates, strict=True)
    ]
    rng.shuffle(relabelled)
    again = search(cluster, relabelled, shape)

    def held(outcome):
        return outcome and sorted(
            (sorted((p.node, p.gpu_indices, p.gpu_milli) for p in v.workload.placements), v.reason)
            for v in outcome[0]
        )

    assert held(again) == held(chosen)


def _shape_of(work):
    return {
        "tier": work.tier,
        "gpus": work.gpus,
        "gpu_milli": work.gpu_milli,
        "replicas": work.replicas,
    }
