"""Fast paths agree with the straightforward computation they replace, on random input."""

from collections import defaultdict

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduling.engine import Quota
from scheduling.engine.capacity import SettledCapacity
from scheduling.engine.explain import free_gpus
from scheduling.engine.free_capacity import ClusterState, Demand
from scheduling.engine.gang import GangShape, gang_capacity
from scheduling.engine.quota import QuotaLedger

from .builders import node, on, request, running

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
    return QuotaLedger(quotas=quotas, running=usage, capacity={CLASS: draw(st.integers(0, 64))})


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
def test_the_pool_drawn_after_any_charge_is_what_the_members_usage_gives(ledger, gang, sign):
    ledger.charge(request=gang, gpu_class=CLASS, replicas=gang.replicas, sign=sign)
    groups = defaultdict(lambda: [0, 0])  # borrowed, unused guarantees
    for tenant in TENANTS:
        quota = ledger.quota(tenant=tenant, resource=CLASS)
        group = groups[quota.cohort or tenant]
        used = ledger.tenant_usage[(tenant, CLASS)]
        group[0] += max(used - quota.guarantee, 0)
        group[1] += max(quota.guarantee - used, 0)
    expected = sum(max(borrowed - unused, 0) for borrowed, unused in groups.values())
    assert ledger.drawn(CLASS) == expected


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
