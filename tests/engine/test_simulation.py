"""The queue's discrete-event simulation: recorded run times are spent exactly once, weights
move waits, and the same arrivals give the same replay."""

from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st

from scheduling.engine import ClusterSnapshot, Policy
from scheduling.engine.fairness import UsageDecay
from scheduling.engine.simulation import Arrival, simulate

from .builders import NOW, node, quota, request

QUOTAS = (quota("acme", gpus=0, limit=16), quota("globex", gpus=0, limit=16))


def one_node(**fields) -> ClusterSnapshot:
    return ClusterSnapshot(nodes=(node("a"),), quotas=QUOTAS, **fields)


def arrival(id, *, tenant="acme", gpus=8, minute=0, hours=1.0, **fields) -> Arrival:
    return Arrival(
        request=request(id, tenant=tenant, gpus=gpus, submitted_minutes_ago=-minute, **fields),
        runtime=timedelta(hours=hours),
    )


def replay(arrivals, snapshot=None, until_hours=48):
    return simulate(
        snapshot=snapshot or one_node(),
        arrivals=arrivals,
        policy=Policy(placement="bestfit", reclaim_after=timedelta(0)),
        until=NOW + timedelta(hours=until_hours),
    )


def gpu_seconds_of(simulation, request_id: str) -> float:
    return sum(s.gpu_seconds for s in simulation.stints if s.request_id == request_id)


def test_work_that_fits_starts_at_its_arrival_and_runs_its_time():
    simulation = replay([arrival("a", minute=5, hours=2)])
    [stint] = simulation.stints
    assert (stint.started_at, stint.ended_at) == (
        NOW + timedelta(minutes=5),
        NOW + timedelta(minutes=5, hours=2),
    )


def test_work_that_does_not_fit_starts_when_the_work_ahead_ends():
    simulation = replay([arrival("first", hours=3), arrival("second", minute=1)])
    assert simulation.first_starts["second"] == NOW + timedelta(hours=3)


def test_a_preempted_workload_runs_only_what_it_had_left():
    low = arrival("low", tier=1, hours=4)
    high = arrival("high", tier=9, minute=60, hours=1)
    simulation = replay([low, high])
    assert [e.victim_id for e in simulation.evictions] == ["low"]
    assert gpu_seconds_of(simulation, "low") == 8 * 4 * 3600


def test_a_workload_evicted_as_often_as_its_tier_allows_is_evicted_no_more():
    low = arrival("low", tier=1, hours=6, max_evictions=1)
    first = arrival("first", tier=9, minute=60, hours=1)
    second = arrival("second", tier=9, minute=180, hours=1)
    simulation = replay([low, first, second])
    assert [e.preemptor_id for e in simulation.evictions] == ["first"]


def test_a_heavier_weight_lets_its_tenant_start_first_when_both_wait():
    history = [
        arrival("acme-long", tenant="acme", gpus=2, hours=10),
        arrival("globex-long", tenant="globex", gpus=4, hours=10),
        arrival("acme-short", tenant="acme", gpus=2, hours=1),
        arrival("acme-next", tenant="acme", gpus=2, minute=1),
        arrival("globex-next", tenant="globex", gpus=2, minute=1),
    ]
    even = replay(history)
    weighted = replay(history, one_node(tenant_weights={"globex": 4.0}))
    assert even.first_starts["acme-next"] < even.first_starts["globex-next"]
    assert weighted.first_starts["globex-next"] < weighted.first_starts["acme-next"]


def test_work_still_running_at_the_end_is_cut_there():
    simulation = replay([arrival("long", hours=100)], until_hours=10)
    assert simulation.stints[0].ended_at == NOW + timedelta(hours=10)


runs = st.lists(
    st.tuples(
        st.sampled_from(["acme", "globex"]),
        st.sampled_from([1, 2, 4, 8]),
        st.integers(0, 600),
        st.integers(1, 240),
        st.sampled_from([1, 5]),
    ),
    max_size=12,
)


@given(runs)
def test_every_run_time_is_replayed_exactly_once(given_runs):
    arrivals = [
        Arrival(
            request=request(f"w{i}", tenant=t, gpus=g, tier=tier, submitted_minutes_ago=-minute),
            runtime=timedelta(minutes=minutes),
        )
        for i, (t, g, minute, minutes, tier) in enumerate(given_runs)
    ]
    simulation = replay(arrivals, until_hours=24 * 30)
    for a in arrivals:
        assert (
            gpu_seconds_of(simulation, a.request.id) == a.request.gpus * a.runtime.total_seconds()
        )


@given(runs)
def test_the_same_arrivals_give_the_same_replay(given_runs):
    arrivals = [
        arrival(f"w{i}", tenant=t, gpus=g, minute=minute, hours=minutes / 60, tier=tier)
        for i, (t, g, minute, minutes, tier) in enumerate(given_runs)
    ]
    assert replay(arrivals) == replay(list(reversed(arrivals)))


def test_with_decayed_usage_a_newcomer_goes_before_the_tenant_that_ran_alone():
    # acme runs the node alone for two hours; globex's work, queued since the first hour,
    # starts when those end only if acme's past counts.
    work = [
        *(arrival(f"acme-{n}", gpus=1, hours=2) for n in range(16)),
        *(arrival(f"globex-{n}", tenant="globex", gpus=1, minute=60, hours=2) for n in range(8)),
    ]

    def globex_starts(decay: UsageDecay) -> timedelta:
        simulation = simulate(
            snapshot=one_node(),
            arrivals=work,
            policy=Policy(placement="bestfit", preemption=False),
            until=NOW + timedelta(hours=12),
            decay=decay,
        )
        return simulation.first_starts["globex-0"] - NOW

    off, on = (UsageDecay(half_life=timedelta(hours=h)) for h in (0, 168))
    assert (globex_starts(off), globex_starts(on)) == (timedelta(hours=4), timedelta(hours=2))
