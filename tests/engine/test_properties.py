"""Properties over random clusters and queues: nothing is ever over-allocated, quotas and
gangs hold, preemption only evicts what it may, and the same input gives the same decisions."""

from collections import defaultdict
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduling.engine import (
    ClusterSnapshot,
    Decisions,
    Policy,
    Quota,
    RunningWorkload,
    schedule,
)

from .builders import NOW, node, request

CLASSES = ("H100-80GB", "L4")
TENANTS = ("acme", "globex", "initech")
POLICIES = ("bestfit", "fgd", "fgd_small_first", "random", "packing")


@st.composite
def nodes(draw):
    count = draw(st.integers(1, 5))
    return tuple(
        node(
            f"n{i}",
            gpu_class=draw(st.sampled_from(CLASSES)),
            free=[
                draw(st.sampled_from((0, 300, 500, 1000, 1000)))
                for _ in range(draw(st.integers(1, 8)))
            ],
            cpu=draw(st.integers(0, 64)) * 1000,
            memory=draw(st.integers(0, 512)) * 1024,
            topology={"rack": f"r{i % 2}"},
        )
        for i in range(count)
    )


@st.composite
def requests(draw, prefix):
    count = draw(st.integers(1, 8))
    made = []
    for i in range(count):
        shape = draw(st.sampled_from(("whole", "share", "cpu")))
        replicas = draw(st.integers(1, 3))
        made.append(
            request(
                f"{prefix}{i}",
                tenant=draw(st.sampled_from(TENANTS)),
                tier=draw(st.integers(0, 3)),
                classes=tuple(draw(st.permutations(CLASSES))[: draw(st.integers(1, 2))]),
                submitted_minutes_ago=draw(st.integers(0, 100)),
                gpus=draw(st.integers(1, 4)) if shape == "whole" else 0,
                gpu_milli=draw(st.sampled_from((200, 500, 700))) if shape == "share" else 0,
                replicas=replicas,
                min_replicas=draw(st.one_of(st.none(), st.integers(1, replicas))),
                cpu_milli=draw(st.integers(0, 16)) * 1000,
                memory_mib=draw(st.integers(0, 64)) * 1024,
                preemptible=draw(st.booleans()),
                anti_affinity=draw(st.booleans()),
            )
        )
    return made


@st.composite
def quotas(draw):
    """Whole GPUs and GPU shares (milli-GPU) of every class for every tenant."""
    return tuple(
        Quota(
            tenant=tenant,
            gpu_class=gpu_class,
            guarantee=(guarantee := draw(st.integers(0, 8)) * unit),
            limit=guarantee + draw(st.integers(0, 8)) * unit,
            cohort=draw(st.sampled_from((None, "lab"))),
            shared=unit != 1,
        )
        for tenant in TENANTS
        for gpu_class in CLASSES
        for unit in (1, 500)
    )


def run(snapshot, pending, running=(), placement="bestfit") -> Decisions:
    return schedule(
        snapshot=snapshot,
        pending=pending,
        running=running,
        now=NOW,
        policy=Policy(placement=placement, seed=3),
    )


def with_running(snapshot, decisions, pending):
    """The cluster after the first cycle: admissions become running work on smaller nodes."""
    by_id = {r.id: r for r in pending}
    free = {
        n.name: [list(n.gpu_free_milli), n.cpu_free_milli, n.memory_free_mib]
        for n in snapshot.nodes
    }
    running = []
    for admission in decisions.admissions:
        for placement in admission.placements:
            state = free[placement.node]
            for gpu in placement.gpu_indices:
                state[0][gpu] -= placement.gpu_milli
            state[1] -= placement.cpu_milli
            state[2] -= placement.memory_mib
        running.append(
            RunningWorkload(
                request=by_id[admission.request_id],
                gpu_class=admission.gpu_class,
                placements=admission.placements,
                started_at=NOW,
                borrowed=admission.borrowed,
            )
        )
    smaller = tuple(
        replace(
            n,
            gpu_free_milli=tuple(free[n.name][0]),
            cpu_free_milli=free[n.name][1],
            memory_free_mib=free[n.name][2],
        )
        for n in snapshot.nodes
    )
    return replace(snapshot, nodes=smaller), running


scenario = given(
    nodes=nodes(),
    first=requests("old"),
    second=requests("new"),
    quota_set=quotas(),
    placement=st.sampled_from(POLICIES),
)
fast = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def two_cycles(nodes, first, second, quota_set, placement):
    snapshot = ClusterSnapshot(nodes=nodes, quotas=quota_set)
    warm = run(snapshot, first, placement=placement)
    later, running = with_running(snapshot, warm, first)
    return later, running, run(later, second, running, placement=placement)


@fast
@scenario
def test_no_gpu_cpu_or_memory_is_ever_over_allocated(nodes, first, second, quota_set, placement):
    snapshot, running, decisions = two_cycles(nodes, first, second, quota_set, placement)
    free = {
        n.name: [list(n.gpu_free_milli), n.cpu_free_milli, n.memory_free_mib]
        for n in snapshot.nodes
    }
    victims = {p.victim_id for p in decisions.preemptions}
    for workload in running:
        if workload.request.id in victims:
            for placement_ in workload.placements:
                for gpu in placement_.gpu_indices:
                    free[placement_.node][0][gpu] += placement_.gpu_milli
                free[placement_.node][1] += placement_.cpu_milli
                free[placement_.node][2] += placement_.memory_mib
    for admission in decisions.admissions:
        for placement_ in admission.placements:
            state = free[placement_.node]
            for gpu in placement_.gpu_indices:
                # a whole GPU is exclusive: it must have been completely idle
                assert placement_.gpu_milli < 1000 or state[0][gpu] == 1000
                state[0][gpu] -= placement_.gpu_milli
            state[1] -= placement_.cpu_milli
            state[2] -= placement_.memory_mib
    assert all(min(g, default=0) >= 0 and c >= 0 and m >= 0 for g, c, m in free.values())


@fast
@scenario
def test_no_quota_limit_is_ever_exceeded(nodes, first, second, quota_set, placement):
    _, running, decisions = two_cycles(nodes, first, second, quota_set, placement)
    limits = {(q.tenant, q.resource): q.limit for q in quota_set}
    victims = {p.victim_id for p in decisions.preemptions}
    requests_by_id = {r.id: r for r in second}
    usage = defaultdict(int)
    for workload in running:
        if workload.request.id not in victims:
            wanted = workload.request
            key = (wanted.tenant, wanted.quota_resource(workload.gpu_class))
            usage[key] += wanted.quota_amount * len(workload.placements)
    for admission in decisions.admissions:
        wanted = requests_by_id[admission.request_id]
        key = (wanted.tenant, wanted.quota_resource(admission.gpu_class))
        usage[key] += wanted.quota_amount * len(admission.placements)
    assert all(used <= limits[key] for key, used in usage.items() if used)


@fast
@scenario
def test_gangs_are_all_or_nothing(nodes, first, second, quota_set, placement):
    _, _, decisions = two_cycles(nodes, first, second, quota_set, placement)
    by_id = {r.id: r for r in second}
    for admission in decisions.admissions:
        wanted = by_id[admission.request_id]
        assert wanted.smallest_gang <= len(admission.placements) <= wanted.replicas
        if wanted.anti_affinity:
            assert len({p.node for p in admission.placements}) == len(admission.placements)
    decided = [a.request_id for a in decisions.admissions] + [
        p.request_id for p in decisions.pending
    ]
    assert sorted(decided) == sorted(by_id)


@fast
@scenario
def test_preemption_only_evicts_what_it_may(nodes, first, second, quota_set, placement):
    _, running, decisions = two_cycles(nodes, first, second, quota_set, placement)
    running_by_id = {w.request.id: w for w in running}
    preemptors = {r.id: r for r in second}
    for preemption in decisions.preemptions:
        victim_work = running_by_id[preemption.victim_id]
        victim = victim_work.request
        preemptor = preemptors[preemption.preemptor_id]
        # Work of a non-preemptible tier goes only to reclaim what it borrowed.
        assert victim.preemptible or (
            victim_work.borrowed and preemption.reason in ("reclaim", "fair-share")
        )
        assert preemption.reason != "priority" or victim.tier < preemptor.tier
        assert preemption.preemptor_id in {a.request_id for a in decisions.admissions}


@fast
@scenario
def test_the_same_input_gives_the_same_decisions(nodes, first, second, quota_set, placement):
    snapshot, running, decisions = two_cycles(nodes, first, second, quota_set, placement)
    assert run(snapshot, second, running, placement=placement) == decisions
