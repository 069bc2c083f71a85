"""The preemption contract in the engine: a tier's minimum run time and eviction cap protect
its work; checkpoints make a victim cheaper (it loses only the work since the last one)."""

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduling.engine import lost_since

from .builders import NOW, cycle, node, on, request, running


def evicted(*workloads):
    decisions = cycle(
        nodes=[node("a", free=[0] * 8)],
        pending=[request("urgent", gpus=4, tier=5)],
        running=list(workloads),
    )
    return [p.victim_id for p in decisions.preemptions]


def test_work_younger_than_its_tiers_minimum_run_time_is_not_evicted():
    young = request("young", gpus=8, tier=1, min_run_time=timedelta(hours=1))
    assert evicted(running(young, on("a", *range(8)), started_minutes_ago=30)) == []


def test_work_past_its_tiers_minimum_run_time_is_evicted():
    old = request("old", gpus=8, tier=1, min_run_time=timedelta(hours=1))
    assert evicted(running(old, on("a", *range(8)), started_minutes_ago=90)) == ["old"]


def test_the_minimum_run_time_sends_the_eviction_to_older_work():
    protected = request("protected", gpus=4, tier=1, min_run_time=timedelta(hours=1))
    assert evicted(
        running(protected, on("a", 0, 1, 2, 3), started_minutes_ago=5),
        running(request("older", gpus=4, tier=1), on("a", 4, 5, 6, 7), started_minutes_ago=600),
    ) == ["older"]


def test_work_evicted_as_often_as_its_tiers_cap_is_no_longer_a_candidate():
    capped = request("capped", gpus=8, tier=1, max_evictions=2, evictions=2)
    assert evicted(running(capped, on("a", *range(8)))) == []


def test_work_below_its_tiers_eviction_cap_is_still_a_candidate():
    capped = request("capped", gpus=8, tier=1, max_evictions=2, evictions=1)
    assert evicted(running(capped, on("a", *range(8)))) == ["capped"]


@pytest.mark.parametrize(
    "checkpoints",
    [
        {"last_checkpoint": NOW - timedelta(minutes=2)},
        {"checkpoint_interval": timedelta(minutes=30)},
    ],
    ids=["reported", "declared-interval"],
)
def test_a_victim_that_checkpoints_is_preferred_to_a_younger_one_that_does_not(checkpoints):
    assert evicted(
        running(request("bare", gpus=4), on("a", 0, 1, 2, 3), started_minutes_ago=60),
        running(
            request("saved", gpus=4), on("a", 4, 5, 6, 7), started_minutes_ago=605, **checkpoints
        ),
    ) == ["saved"]


def test_work_is_lost_since_the_last_interval_checkpoint():
    started = NOW - timedelta(minutes=95)
    since = lost_since(started_at=started, now=NOW, checkpoint_interval=timedelta(minutes=30))
    assert since == NOW - timedelta(minutes=5)


def test_a_reported_checkpoint_later_than_the_interval_one_counts():
    started = NOW - timedelta(minutes=95)
    since = lost_since(
        started_at=started,
        now=NOW,
        last_checkpoint=NOW - timedelta(minutes=1),
        checkpoint_interval=timedelta(minutes=30),
    )
    assert since == NOW - timedelta(minutes=1)


def test_without_checkpoints_work_is_lost_since_the_start():
    started = NOW - timedelta(minutes=95)
    assert lost_since(started_at=started, now=NOW) == started


def test_a_checkpoint_from_before_a_restart_does_not_count():
    started = NOW - timedelta(minutes=10)
    since = lost_since(started_at=started, now=NOW, last_checkpoint=NOW - timedelta(hours=2))
    assert since == started


@given(
    ran=st.integers(min_value=0, max_value=10**6),
    checkpoint_ago=st.none() | st.integers(min_value=0, max_value=2 * 10**6),
    interval=st.none() | st.integers(min_value=1, max_value=10**5),
)
def test_work_is_lost_since_a_time_between_the_start_and_now(ran, checkpoint_ago, interval):
    started = NOW - timedelta(seconds=ran)
    since = lost_since(
        started_at=started,
        now=NOW,
        last_checkpoint=None if checkpoint_ago is None else NOW - timedelta(seconds=checkpoint_ago),
        checkpoint_interval=None if interval is None else timedelta(seconds=interval),
    )
    assert started <= since <= NOW
