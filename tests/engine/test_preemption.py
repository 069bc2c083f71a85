"""Preemption: cheapest allowed victims, never the non-preemptible, no ping-pong."""

from .builders import admitted, cycle, node, on, reason, request, running


def full_node_with(*workloads):
    return cycle(
        nodes=[node("a", free=[0] * 8)],
        pending=[request("urgent", gpus=4, tier=5)],
        running=list(workloads),
    )


def test_a_higher_tier_evicts_a_lower_preemptible_tier():
    decisions = full_node_with(running(request("batch", gpus=8, tier=1), on("a", *range(8))))
    assert [p.victim_id for p in decisions.preemptions] == ["batch"]


def test_the_preemptor_is_admitted_onto_the_freed_capacity():
    decisions = full_node_with(running(request("batch", gpus=8, tier=1), on("a", *range(8))))
    assert admitted(decisions) == ["urgent"]


def test_a_non_preemptible_workload_is_never_evicted():
    decisions = full_node_with(
        running(request("prod", gpus=8, tier=1, preemptible=False), on("a", *range(8)))
    )
    assert decisions.preemptions == ()


def test_an_equal_tier_is_not_evicted_for_priority():
    decisions = cycle(
        nodes=[node("a", free=[0] * 8)],
        pending=[request("same", gpus=4, tier=1)],
        running=[running(request("batch", gpus=8, tier=1), on("a", *range(8)))],
    )
    assert decisions.preemptions == ()


def test_the_lowest_tier_is_evicted_first():
    decisions = full_node_with(
        running(request("tier2", gpus=4, tier=2), on("a", 0, 1, 2, 3)),
        running(request("tier1", gpus=4, tier=1), on("a", 4, 5, 6, 7)),
    )
    assert [p.victim_id for p in decisions.preemptions] == ["tier1"]


def test_among_equal_tiers_the_least_work_lost_is_evicted():
    decisions = full_node_with(
        running(request("old", gpus=4), on("a", 0, 1, 2, 3), started_minutes_ago=600),
        running(request("new", gpus=4), on("a", 4, 5, 6, 7), started_minutes_ago=5),
    )
    assert [p.victim_id for p in decisions.preemptions] == ["new"]


def test_no_more_victims_than_needed_are_evicted():
    decisions = full_node_with(
        *(running(request(f"one-{i}", gpus=1), on("a", i)) for i in range(8))
    )
    assert len(decisions.preemptions) == 4


def test_a_workload_cannot_evict_the_workload_that_evicted_it():
    decisions = cycle(
        nodes=[node("a", free=[0] * 8)],
        pending=[request("returning", gpus=8, tier=5, evicted_by=("winner",))],
        running=[running(request("winner", gpus=8, tier=1), on("a", *range(8)))],
    )
    assert decisions.preemptions == ()


def test_a_workload_admitted_this_cycle_is_not_evicted_in_the_same_cycle():
    decisions = cycle(
        nodes=[node("a", gpus=4)],
        pending=[
            request("first", gpus=4, tier=5),
            request("second", gpus=4, tier=9, submitted_minutes_ago=1),
        ],
    )
    assert (admitted(decisions), decisions.preemptions) == (["second"], ())


def test_preemption_can_be_switched_off_by_policy():
    decisions = cycle(
        nodes=[node("a", free=[0] * 8)],
        pending=[request("urgent", gpus=4, tier=5)],
        running=[running(request("batch", gpus=8, tier=1), on("a", *range(8)))],
        preemption=False,
    )
    assert reason(decisions, "urgent").code == "capacity"


def test_the_preemption_message_names_both_tiers():
    decisions = full_node_with(running(request("batch", gpus=8, tier=1), on("a", *range(8))))
    assert "tier 5 over tier 1" in decisions.preemptions[0].message


def at_quota_limit(*workloads, pending_tier=5, quotas=None):
    """acme may use 8 GPUs and uses them all; two free nodes wait for a 4-GPU request."""
    from .builders import quota

    return cycle(
        nodes=[node("a", free=[0] * 8), node("b"), node("c")],
        pending=[request("urgent", gpus=4, tier=pending_tier)],
        running=list(workloads),
        quotas=quotas or [quota("acme", gpus=8), quota("globex", gpus=8)],
    )


def test_a_tenant_at_its_quota_evicts_its_own_lower_tier_work_to_run_higher_tier_work():
    decisions = at_quota_limit(running(request("batch", gpus=8, tier=1), on("a", *range(8))))
    assert [p.victim_id for p in decisions.preemptions] == ["batch"]
    assert admitted(decisions) == ["urgent"]


def test_at_its_quota_a_tenant_evicts_only_as_much_of_its_own_work_as_the_quota_needs():
    decisions = at_quota_limit(
        *(running(request(f"one-{i}", gpus=1, tier=1), on("a", i)) for i in range(8))
    )
    assert len(decisions.preemptions) == 4


def test_at_its_quota_a_tenant_never_evicts_another_tenants_work():
    decisions = at_quota_limit(
        running(request("acme-prod", gpus=8, tier=9), on("b", *range(8))),
        running(request("globex-batch", gpus=8, tier=1, tenant="globex"), on("a", *range(8))),
    )
    assert decisions.preemptions == ()
    assert reason(decisions, "urgent").code == "quota"


def test_at_its_quota_a_tenant_never_evicts_its_own_work_of_the_same_tier():
    decisions = at_quota_limit(running(request("peer", gpus=8, tier=5), on("a", *range(8))))
    assert decisions.preemptions == ()


def test_at_its_quota_a_tenant_never_evicts_its_own_non_preemptible_work():
    decisions = at_quota_limit(
        running(request("prod", gpus=8, tier=1, preemptible=False), on("a", *range(8)))
    )
    assert decisions.preemptions == ()
