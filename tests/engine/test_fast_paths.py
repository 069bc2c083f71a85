"""Fast paths agree with the straightforward computation they replace, on random input."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduling.engine import Quota
from scheduling.engine.capacity import SettledCapacity
from scheduling.engine.explain import free_gpus
from scheduling.engine.free_capacity import ClusterState, Demand
from scheduling.engine.gang import GangShape, gang_capacity, place_gang, topology_domains
from scheduling.engine.policies import make_policy
from scheduling.engine.preemption import Victim, choose_victims
from scheduling.engine.quota import QuotaLedger

from .builders import NOW, node, on, request, running

TENANTS = ("acme", "globex", "initech")
CLASS = "H100-80GB"
fast = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def ledgers(draw):
    quotas = [
        Quota(
            tenant=tenant,
            gpu_class=CLASS,
            guarantee=(guarantee := draw(st.integers(0, 16))),
            limit=guarantee + draw(st.integers(0, 16)),
            cohort=draw(st.sampled_from((None, "lab", "other"))),
        )
        for tenant in TENANTS
    ]
    quotas.append(Quota(tenant="acme", project="small", gpu_class=CLASS, guarantee=2, limit=5))
    usage = [
        running(
            request(
                f"run{i}",
                tenant=draw(st.sampled_from(TENANTS)),
                project=draw(st.sampled_from(("ai-dev", "small"))),
                gpus=draw(st.integers(1, 8)),
            ),
            *[on("a")] * draw(st.integers(1, 3)),
        )
        for i in range(draw(st.integers(0, 6)))
    ]
    return QuotaLedger(quotas=quotas, running=usage)


@st.composite
def gangs(draw):
    replicas = draw(st.integers(1, 12))
    return request(
        "gang",
        tenant=draw(st.sampled_from(TENANTS)),
        project=draw(st.sampled_from(("ai-dev", "small"))),
        gpus=draw(st.integers(0, 4)),
        replicas=replicas,
        min_replicas=draw(st.one_of(st.none(), st.integers(1, replicas))),
    )


@fast
@given(ledger=ledgers(), gang=gangs())
def test_the_most_replicas_allowed_is_what_checking_every_count_finds(ledger, gang):
    expected = 0, ledger.check(request=gang, gpu_class=CLASS, replicas=gang.smallest_gang)
    for count in range(gang.replicas, gang.smallest_gang - 1, -1):
        verdict = ledger.check(request=gang, gpu_class=CLASS, replicas=count)
        if verdict.allowed:
            expected = count, verdict
            break
    assert ledger.most_replicas(request=gang, gpu_class=CLASS) == expected


@fast
@given(ledger=ledgers(), gang=gangs(), sign=st.sampled_from((1, -1)))
def test_cohort_usage_is_the_sum_of_its_members_usage_after_any_charge(ledger, gang, sign):
    ledger.charge(request=gang, gpu_class=CLASS, replicas=gang.replicas, sign=sign)
    for cohort in ("lab", "other"):
        members = [
            tenant
            for tenant in TENANTS
            if (quota := ledger.quota(tenant=tenant, gpu_class=CLASS)) and quota.cohort == cohort
        ]
        expected = sum(ledger.tenant_usage[(tenant, CLASS)] for tenant in members)
        assert ledger.cohort_usage(cohort=cohort, gpu_class=CLASS) == expected


@st.composite
def busy_clusters(draw):
    """Nodes partly taken by small running workloads (the victim candidates), so that a gang
    often needs several victims, and sometimes more than there are."""
    nodes, workloads = [], []
    for i in range(draw(st.integers(1, 6))):
        sizes = draw(st.lists(st.integers(1, 2), max_size=6))
        taken = min(sum(sizes), 8)
        nodes.append(
            node(
                f"n{i}",
                free=[0] * taken + [1000] * (8 - taken),
                cpu=draw(st.integers(8, 64)) * 1000,
                topology={"rack": f"r{i % 2}"},
            )
        )
        first = 0
        for j, size in enumerate(sizes):
            gpus = range(first, min(first + size, taken))
            first += size
            if gpus:
                workloads.append(
                    running(
                        request(f"victim{i}-{j}", tier=draw(st.integers(0, 2)), gpus=len(gpus)),
                        on(f"n{i}", *gpus),
                        started_minutes_ago=draw(st.integers(1, 600)),
                    )
                )
    shape = GangShape(
        demand=Demand(
            cpu_milli=draw(st.integers(0, 8)) * 1000, gpus=draw(st.integers(1, 8)), gpu_milli=1000
        ),
        replicas=(replicas := draw(st.integers(1, 6))),
        min_replicas=draw(st.integers(1, replicas)),
        anti_affinity=draw(st.booleans()),
    )
    return nodes, workloads, shape


def victim_search(nodes, workloads, shape, *, with_cutoff):
    cluster = ClusterState(nodes)
    everywhere = np.arange(len(cluster))
    domains = topology_domains(cluster=cluster, levels=("rack",))
    policy = make_policy(name="bestfit")
    chosen = choose_victims(
        cluster=cluster,
        candidates=[Victim(workload=w, reason="priority") for w in workloads],
        now=NOW,
        place=lambda victims: place_gang(
            cluster=cluster, shape=shape, among=everywhere, policy=policy, domains=domains
        ),
        could_fit=lambda: (
            not with_cutoff
            or int(gang_capacity(cluster=cluster, shape=shape, among=everywhere).sum())
            >= shape.min_replicas
        ),
    )
    victims = None if chosen is None else [v.workload.request.id for v in chosen[0]]
    return victims, chosen and chosen[1], cluster.gpu_free.tolist(), cluster.cpu_free.tolist()


@fast
@given(scenario=busy_clusters())
def test_the_hopeless_cutoff_never_changes_the_victims_or_placements(scenario):
    nodes, workloads, shape = scenario
    assert victim_search(nodes, workloads, shape, with_cutoff=True) == victim_search(
        nodes, workloads, shape, with_cutoff=False
    )


@st.composite
def pooled_clusters(draw):
    nodes = [
        node(
            f"n{i}",
            pool=draw(st.sampled_from(("train", "serve"))),
            free=draw(st.lists(st.sampled_from((0, 250, 1000)), min_size=1, max_size=8)),
            cpu=draw(st.integers(0, 64)) * 1000,
        )
        for i in range(draw(st.integers(1, 6)))
    ]
    shape = GangShape(
        demand=draw(
            st.sampled_from(
                (
                    Demand(cpu_milli=4000, gpus=1, gpu_milli=250),
                    Demand(cpu_milli=8000, gpus=2, gpu_milli=1000),
                    Demand(gpus=1, gpu_milli=1000),
                )
            )
        ),
        replicas=3,
        min_replicas=3,
        anti_affinity=draw(st.booleans()),
    )
    return nodes, shape, draw(st.integers(0, len(nodes) - 1))


def settled_answers(settled, cluster, shape, among):
    return (
        settled.gang_room(shape=shape, among=among),
        settled.free_gpus(among=among, shared=shape.demand.is_shared),
        settled.idle_by_pool(among=among),
    )


def fresh_answers(cluster, shape, among):
    idle = dict.fromkeys(sorted({n.pool for n in cluster.nodes}), 0)
    for i in among.tolist():
        idle[cluster.nodes[i].pool] += int((cluster.gpu_free[i] >= 1000).sum())
    return (
        int(gang_capacity(cluster=cluster, shape=shape, among=among).sum()),
        free_gpus(cluster=cluster, among=among, shared=shape.demand.is_shared),
        idle,
    )


@fast
@given(scenario=pooled_clusters())
def test_settled_capacity_answers_as_a_fresh_count_before_and_after_a_change(scenario):
    nodes, shape, taken = scenario
    cluster = ClusterState(nodes)
    settled = SettledCapacity(cluster)
    everywhere = settled.keep(np.arange(len(cluster)))
    before = settled_answers(settled, cluster, shape, everywhere)
    assert before == fresh_answers(cluster, shape, everywhere)
    idle = np.flatnonzero(cluster.gpu_free[taken] == 1000)
    cluster.allocate(
        node=taken, demand=Demand(gpus=1, gpu_milli=1000), gpu_indices=tuple(idle[:1].tolist())
    )
    settled.changed()
    assert settled_answers(settled, cluster, shape, everywhere) == fresh_answers(
        cluster, shape, everywhere
    )
