"""What would unblock a waiting request: each kind of alternative, found by trying variants on
the real engine (``cycle_answers``), and each admitted when submitted as offered."""

from dataclasses import replace
from datetime import timedelta

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from scheduling.engine import ClusterSnapshot, Policy, Reservation, schedule
from scheduling.engine.alternatives import (
    MAX_TRIALS,
    AlternativeKind,
    QuotaIncrease,
    alternatives,
)
from scheduling.engine.trials import (
    answer_in,
    cluster_at,
    cycle_answers,
    kept_answers,
    with_quota,
)
from scheduling.engine.what_if import schedule_keeping

from .builders import NOW, node, on, quota, request, running

POLICY = Policy(placement="bestfit")
CLASSES = ("H100-80GB", "A100-80GB")


def _snapshot(nodes, quotas=None, reservations=()):
    if quotas is None:
        quotas = [
            quota(gpu_class=c, **form)
            for c in CLASSES
            for form in ({}, {"shared": True}, {"mig_profile": "mig-1g.10gb"})
        ]
    return ClusterSnapshot(nodes=tuple(nodes), quotas=tuple(quotas), reservations=reservations)


def _alternatives(snapshot, waiting_request, work=(), *, may_shrink=True, answer_of=None):
    answer_of = answer_of or cycle_answers(
        snapshot=snapshot, pending=[waiting_request], running=work, now=NOW, policy=POLICY
    )
    waiting = answer_of(waiting_request)
    assert not waiting.admitted
    return alternatives(
        request=waiting_request,
        waiting=waiting,
        snapshot=snapshot,
        running=work,
        now=NOW,
        answer_of=answer_of,
        may_shrink=may_shrink,
    )


def _kinds(found):
    return {a.kind: a for a in found}


def _half_full_node():
    holder = running(request("holder", gpus=4), on("n1", 0, 1, 2, 3))
    return [node("n1", free=[0, 0, 0, 0, 1000, 1000, 1000, 1000])], [holder]


def test_a_job_too_large_for_the_free_gpus_is_offered_fewer_gpus_per_replica():
    nodes, work = _half_full_node()
    found = _kinds(_alternatives(_snapshot(nodes), request("big", gpus=8), work))

    fewer = found[AlternativeKind.FEWER_GPUS]
    assert (fewer.change, fewer.request.gpus, fewer.answer.admitted) == (
        "4 GPUs per replica instead of 8",
        4,
        True,
    )


def test_a_kind_that_may_not_shrink_is_never_offered_fewer_gpus():
    nodes, work = _half_full_node()
    found = _alternatives(_snapshot(nodes), request("svc", gpus=8), work, may_shrink=False)

    assert AlternativeKind.FEWER_GPUS not in _kinds(found)


def test_a_full_class_is_offered_another_class_the_request_is_eligible_for():
    nodes = [node("h1", free=[0] * 8), node("a1", gpu_class="A100-80GB", pool="a100")]
    found = _kinds(_alternatives(_snapshot(nodes), request("job", gpus=2)))

    other = found[AlternativeKind.GPU_CLASS]
    assert (other.change, other.answer.gpu_class, other.answer.pool) == (
        "A100-80GB instead of H100-80GB",
        "A100-80GB",
        "a100",
    )


def test_a_class_on_a_pool_the_request_excludes_is_not_offered():
    nodes = [node("h1", free=[0] * 8), node("a1", gpu_class="A100-80GB", pool="a100")]
    found = _alternatives(_snapshot(nodes), request("job", gpus=2, pools=("dgx",)))

    assert AlternativeKind.GPU_CLASS not in _kinds(found)


def _mig_cluster():
    return [
        node("h1", free=[0] * 8),
        node("a1", gpu_class="A100-80GB", pool="a100", free=[0] * 8, mig_free={"mig-1g.10gb": 7}),
    ]


def test_a_one_gpu_job_is_offered_mig_instances_where_its_kind_may_shrink():
    found = _kinds(_alternatives(_snapshot(_mig_cluster()), request("nb", gpus=1)))

    mig = found[AlternativeKind.MIG_PROFILE]
    assert (mig.change, mig.request.mig_count, mig.answer.admitted) == (
        "1g.10gb MIG instances of A100-80GB, one per replica",
        1,
        True,
    )


def test_a_smaller_mig_instance_is_not_offered_where_the_kind_may_not_shrink():
    found = _alternatives(_snapshot(_mig_cluster()), request("svc", gpus=1), may_shrink=False)

    assert AlternativeKind.MIG_PROFILE not in _kinds(found)


def test_work_kept_off_a_reservation_with_no_estimate_is_offered_a_start_after_its_window():
    ends = NOW + timedelta(hours=5)
    window = Reservation(
        id="r1",
        tenant="globex",
        gpu_class="H100-80GB",
        gpus=8,
        pool="dgx",
        starts_at=NOW + timedelta(hours=1),
        ends_at=ends,
    )
    snapshot = _snapshot([node("n1")], reservations=(window,))
    job = request("job", gpus=8, preemptible=False, max_runtime=timedelta(hours=3))

    later = _kinds(_alternatives(snapshot, job))[AlternativeKind.LATER_START]

    assert (later.not_before, later.start, later.change) == (
        ends,
        ends,
        f"start after {ends:%Y-%m-%d %H:%M} UTC",
    )


def _over_quota():
    holder = running(request("holder", gpus=4), on("n1", 0, 1, 2, 3))
    grant = quota(gpus=4)
    return _snapshot([node("n1"), node("n2")], quotas=[grant]), [holder]


def test_a_job_over_its_quota_is_offered_a_quota_request_for_the_missing_amount():
    snapshot, work = _over_quota()
    found = _kinds(_alternatives(snapshot, request("job", gpus=4), work))

    ask = found[AlternativeKind.QUOTA_REQUEST]
    assert ask.quota == QuotaIncrease(
        gpu_class="H100-80GB", resource="gpus", mig_profile=None, amount=4
    )
    assert ask.answer.admitted


def test_the_engine_is_asked_at_most_max_trials_times_per_request():
    nodes = [node("h1", free=[0] * 8)] + [
        node(f"x{i}", gpu_class=f"X{i}", pool=f"p{i}", free=[0] * 8, mig_free={"mig-1g.10gb": 0})
        for i in range(12)
    ]
    snapshot = _snapshot(nodes)
    job = request("job", gpus=8)
    real = cycle_answers(snapshot=snapshot, pending=[job], running=(), now=NOW, policy=POLICY)
    asked = []

    def counted(variant, **how):
        asked.append(variant)
        return real(variant, **how)

    _alternatives(snapshot, job, answer_of=counted)

    assert len(asked) <= MAX_TRIALS + 1  # the trials, and the request's own answer


def test_an_alternative_costs_its_gpu_hours_over_its_max_runtime():
    nodes, work = _half_full_node()
    job = request("big", gpus=8, max_runtime=timedelta(hours=3))
    fewer = _kinds(_alternatives(_snapshot(nodes), job, work))[AlternativeKind.FEWER_GPUS]

    assert fewer.gpu_hours == 12.0


# -- the property: every alternative offered is what the engine decides when submitted so ----


def _as_submitted(alternative, snapshot, pending, work):
    """The real cycle with the alternative submitted as offered: its quota granted, or at its
    start on the cluster as running work leaves it then."""
    state, now = snapshot, NOW
    if alternative.not_before is not None:
        now = alternative.not_before
        state, work = cluster_at(snapshot, work, at=now)
    if alternative.quota is not None:
        own = next(q for q in snapshot.quotas if q.gpu_class == alternative.quota.gpu_class)
        more = alternative.quota.amount
        state = with_quota(
            state, replace(own, guarantee=own.guarantee + more, limit=own.limit + more)
        )
    others = [r for r in pending if r.id != alternative.request.id]
    decisions = schedule(
        snapshot=state, pending=[*others, alternative.request], running=work, now=now, policy=POLICY
    )
    return answer_in(decisions, request_id=alternative.request.id, nodes=state.nodes)


@st.composite
def clusters(draw):
    nodes = [
        node(
            f"n{i}",
            gpu_class=draw(st.sampled_from(CLASSES)),
            pool=f"p{i % 2}",
            gpus=8,
            mig_free=draw(st.sampled_from(({}, {"mig-1g.10gb": 7}))),
        )
        for i in range(draw(st.integers(1, 3)))
    ]
    work = []
    for i, n in enumerate(nodes):
        held = draw(st.integers(0, 8))
        if held:
            runtime = draw(st.sampled_from((None, timedelta(hours=1), timedelta(hours=4))))
            holder = request(f"run{i}", gpus=held, classes=(n.gpu_class,), max_runtime=runtime)
            work.append(running(holder, on(n.name, *range(held)), gpu_class=n.gpu_class))
            nodes[i] = replace(n, gpu_free_milli=(0,) * held + (1000,) * (8 - held))
    reservations = ()
    if draw(st.booleans()):
        opens = NOW + timedelta(hours=draw(st.integers(0, 3)))
        window = Reservation(
            id="r1",
            tenant="globex",
            gpu_class=nodes[0].gpu_class,
            gpus=draw(st.sampled_from((4, 8))),
            pool=nodes[0].pool,
            starts_at=opens,
            ends_at=opens + timedelta(hours=draw(st.integers(1, 6))),
        )
        reservations = (window,)
    limit = draw(st.integers(4, 40))
    quotas = [quota(gpu_class=c, gpus=limit) for c in CLASSES] + [
        quota(gpu_class=c, mig_profile="mig-1g.10gb") for c in CLASSES
    ]
    job = request(
        "job",
        gpus=draw(st.sampled_from((1, 2, 4, 8))),
        replicas=draw(st.integers(1, 3)),
        classes=(draw(st.sampled_from(CLASSES)),),
        max_runtime=timedelta(hours=2),
        preemptible=draw(st.booleans()),
    )
    return _snapshot(nodes, quotas=quotas, reservations=reservations), work, job


def _each_offered_starts_as_offered(case, answer_of) -> None:
    snapshot, work, job = case
    waiting = answer_of(job)
    if waiting.admitted:
        return
    found = alternatives(
        request=job,
        waiting=waiting,
        snapshot=snapshot,
        running=work,
        now=NOW,
        answer_of=answer_of,
        may_shrink=True,
    )
    for alternative in found:
        submitted = _as_submitted(alternative, snapshot, [job], work)
        assert submitted.start(now=alternative.not_before or NOW) == alternative.start


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(clusters())
def test_each_alternative_offered_is_admitted_or_starts_as_offered_when_submitted(case):
    snapshot, work, job = case
    answer_of = cycle_answers(
        snapshot=snapshot, pending=[job], running=work, now=NOW, policy=POLICY
    )
    _each_offered_starts_as_offered(case, answer_of)


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(clusters())
def test_each_alternative_tried_on_the_kept_state_starts_as_offered_when_submitted(case):
    """What the portal offers: alternatives tried by what-ifs on the state a cycle kept."""
    snapshot, work, job = case
    _, end = schedule_keeping(
        snapshot=snapshot, pending=[job], running=work, now=NOW, policy=POLICY
    )
    assume(end.settled)
    _each_offered_starts_as_offered(case, kept_answers(end, now=NOW))
