"""Fair share of lent capacity: what no guarantee covers is shared by weight, and a tenant
below its share reclaims the excess of one above it, without shares ever crossing."""

from collections import Counter
from dataclasses import replace
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduling.engine import Decisions, NodeState, RunningWorkload

from .builders import NOW, cycle, node, on, quota, reason, request, running

GPUS = 16
QUOTAS = [quota("acme", gpus=0, limit=GPUS), quota("globex", gpus=0, limit=GPUS)]


def one_gpu_jobs(tenant: str, count: int, *, first: int = 0) -> list:
    return [request(f"{tenant}-{i}", tenant=tenant, gpus=1) for i in range(first, first + count)]


def holding(tenant: str, count: int, *, minutes_ago: int = 60) -> list[RunningWorkload]:
    """``count`` one-GPU workloads of ``tenant``, on GPUs 0.. of nodes a and b in turn."""
    return [
        running(
            request(f"{tenant}-run-{i}", tenant=tenant, gpus=1),
            on("ab"[i // 8], i % 8),
            started_minutes_ago=minutes_ago,
            borrowed=True,
        )
        for i in range(count)
    ]


def nodes_around(work: list[RunningWorkload]) -> list[NodeState]:
    """Nodes a and b of 8 GPUs each, less what ``work`` holds."""
    free = {"a": [1000] * 8, "b": [1000] * 8}
    for workload in work:
        for placement in workload.placements:
            for gpu in placement.gpu_indices:
                free[placement.node][gpu] -= placement.gpu_milli
    return [node(name, free=gpus) for name, gpus in free.items()]


def apply(
    decisions: Decisions, work: list[RunningWorkload], pending: list
) -> tuple[list[RunningWorkload], list]:
    """The running work and the queue after a cycle's decisions (victims requeued)."""
    victims = {p.victim_id for p in decisions.preemptions}
    by_id = {r.id: r for r in pending} | {w.request.id: w.request for w in work}
    admitted = [
        RunningWorkload(
            request=by_id[a.request_id],
            gpu_class=a.gpu_class,
            placements=a.placements,
            started_at=NOW,
            borrowed=a.borrowed,
        )
        for a in decisions.admissions
    ]
    kept = [w for w in work if w.request.id not in victims]
    started = {a.request_id for a in decisions.admissions}
    waiting = [r for r in pending if r.id not in started] + [by_id[v] for v in sorted(victims)]
    return kept + admitted, waiting


def settle(work, pending, *, cycles: int, **fields) -> tuple[Counter, list[Decisions]]:
    """GPUs each tenant holds after ``cycles`` cycles, with no minimum run time."""
    history = []
    for _ in range(cycles):
        decisions = cycle(
            nodes=nodes_around(work),
            pending=pending,
            running=work,
            quotas=fields.get("quotas", QUOTAS),
            tenant_weights=fields.get("tenant_weights"),
            tenant_usage=fields.get("tenant_usage"),
            reclaim_after=timedelta(0),
        )
        history.append(decisions)
        work, pending = apply(decisions, work, pending)
    held = Counter()
    for workload in work:
        held[workload.request.tenant] += workload.request.gpus * len(workload.placements)
    return held, history


def test_gpus_no_guarantee_covers_are_lent_to_every_tenant_within_its_limit():
    held, _ = settle([], one_gpu_jobs("acme", 20), cycles=1)
    assert held == {"acme": GPUS}


def test_two_tenants_of_equal_weight_end_with_equal_halves_within_two_cycles():
    held, _ = settle(holding("acme", GPUS), one_gpu_jobs("globex", GPUS), cycles=2)
    assert held == {"acme": 8, "globex": 8}


def test_the_halves_do_not_depend_on_which_tenant_came_first():
    held, _ = settle(holding("globex", GPUS), one_gpu_jobs("acme", GPUS), cycles=2)
    assert held == {"acme": 8, "globex": 8}


def test_once_shares_are_equal_no_cycle_evicts_anything():
    _, history = settle(holding("acme", GPUS), one_gpu_jobs("globex", GPUS), cycles=4)
    assert [len(d.preemptions) for d in history[1:]] == [0, 0, 0]


def test_a_reclaim_never_moves_the_shares_past_each_other():
    theirs = running(request("globex-big", tenant="globex", gpus=6), on("b", 2, 3, 4, 5, 6, 7))
    work = [*holding("acme", 10), theirs]
    decisions = cycle(
        nodes=nodes_around(work),
        pending=[request("globex-more", tenant="globex", gpus=4)],
        running=work,
        quotas=QUOTAS,
        reclaim_after=timedelta(0),
    )
    assert decisions.preemptions == ()


def test_a_weight_of_two_gives_twice_the_share():
    held, _ = settle(
        holding("acme", 15),
        one_gpu_jobs("globex", GPUS),
        cycles=2,
        tenant_weights={"globex": 2.0},
    )
    assert held == {"acme": 6, "globex": 10}


def test_work_younger_than_the_minimum_run_time_is_not_reclaimed():
    decisions = cycle(
        nodes=nodes_around(holding("acme", GPUS, minutes_ago=5)),
        pending=one_gpu_jobs("globex", 1),
        running=holding("acme", GPUS, minutes_ago=5),
        quotas=QUOTAS,
        reclaim_after=timedelta(minutes=10),
    )
    assert decisions.preemptions == ()


def test_a_fair_share_reclaim_says_who_held_more_than_its_share():
    decisions = cycle(
        nodes=nodes_around(holding("acme", GPUS)),
        pending=one_gpu_jobs("globex", 1),
        running=holding("acme", GPUS),
        quotas=QUOTAS,
    )
    assert [(p.reason, p.message) for p in decisions.preemptions] == [
        (
            "fair-share",
            "acme held more than its fair share of lent H100-80GB; globex, below its share,"
            " took it back for globex-0.",
        )
    ]


def test_higher_tier_work_is_not_reclaimed_for_a_fair_share():
    work = [replace(w, request=replace(w.request, tier=5)) for w in holding("acme", GPUS)]
    decisions = cycle(
        nodes=nodes_around(work), pending=one_gpu_jobs("globex", 1), running=work, quotas=QUOTAS
    )
    assert reason(decisions, "globex-0").code == "quota"


@settings(max_examples=40, deadline=None)
@given(
    acme=st.integers(0, GPUS),
    globex=st.integers(0, GPUS),
    acme_weight=st.sampled_from((1.0, 2.0, 3.0)),
)
def test_no_reclaim_leaves_the_winner_above_the_loser_by_weight(acme, globex, acme_weight):
    """Whatever the starting holdings, a cycle's fair-share reclaims leave every tenant that
    lost work holding at least the share (by weight) of the tenant that took it."""
    globex = min(globex, GPUS - acme)
    work = holding("acme", acme) + [
        replace(w, placements=(on("ab"[(acme + i) // 8], (acme + i) % 8),))
        for i, w in enumerate(holding("globex", globex))
    ]
    weights = {"acme": acme_weight}
    pending = one_gpu_jobs("acme", GPUS, first=100) + one_gpu_jobs("globex", GPUS, first=100)
    decisions = cycle(
        nodes=nodes_around(work),
        pending=pending,
        running=work,
        quotas=QUOTAS,
        tenant_weights=weights,
        reclaim_after=timedelta(0),
    )
    work, _ = apply(decisions, work, pending)
    held = Counter(w.request.tenant for w in work)
    by_id = {
        w.request.id: w.request.tenant for w in holding("acme", acme) + holding("globex", globex)
    }
    for preemption in decisions.preemptions:
        loser = by_id[preemption.victim_id]
        winner = "globex" if loser == "acme" else "acme"
        share = {t: held[t] / weights.get(t, 1.0) for t in ("acme", "globex")}
        assert share[loser] >= share[winner]
