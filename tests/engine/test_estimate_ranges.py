"""Start estimates as a range: running work's remaining time drawn from what similar work
actually ran, the queue simulated forward per draw."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from scheduling.engine import (
    Policy,
    RuntimeSamples,
    StartRange,
    calibration,
    interval_scale,
    schedule,
)
from scheduling.engine.estimates import SCALE_MAX

from .builders import NOW, cycle, node, on, reason, request, running
from .scenarios import mixed_cluster

HOUR = 3600.0


def _busy_cluster(*, runtimes: RuntimeSamples | None, busy_hours: int | None = 4, seed: int = 0):
    """Two nodes busy with one workload each (started an hour ago), one gang waiting for both."""
    busy = [
        running(
            request(
                f"busy-{i}",
                gpus=8,
                max_runtime=timedelta(hours=busy_hours) if busy_hours else None,
            ),
            on(f"n{i}", *range(8)),
            started_minutes_ago=60,
        )
        for i in range(2)
    ]
    if runtimes is not None:
        runtimes = RuntimeSamples(
            buckets=runtimes.buckets, bucket_of=runtimes.bucket_of, seed=seed, draws=64
        )
    return cycle(
        nodes=[node("n0", free=[0] * 8), node("n1", free=[0] * 8)],
        pending=[request("job", gpus=8, replicas=2)],
        running=busy,
        preemption=False,
        runtimes=runtimes,
    )


def _similar(*hours: float) -> RuntimeSamples:
    """Both busy workloads in one bucket whose finished work ran ``hours``."""
    return RuntimeSamples(
        buckets={"acme/training/8": tuple(sorted(h * HOUR for h in hours))},
        bucket_of={"busy-0": "acme/training/8", "busy-1": "acme/training/8"},
    )


SPREAD = _similar(1.5, 1.75, 2, 2.25, 2.5, 2.75, 3, 3.25, 3.5)


def test_with_max_runtimes_and_no_samples_the_range_collapses_to_the_point():
    waiting = reason(_busy_cluster(runtimes=None), "job")
    assert waiting.estimated_start_low == waiting.estimated_start == waiting.estimated_start_high
    assert waiting.estimated_start == NOW + timedelta(hours=3)


def test_the_range_is_ordered_low_likely_high():
    waiting = reason(_busy_cluster(runtimes=SPREAD), "job")
    assert waiting.estimated_start_low <= waiting.estimated_start <= waiting.estimated_start_high


def test_the_range_is_narrower_than_the_max_runtime_and_ends_by_it():
    waiting = reason(_busy_cluster(runtimes=SPREAD), "job")
    assert waiting.estimated_start_low < waiting.estimated_start_high
    assert waiting.estimated_start_high <= NOW + timedelta(hours=3)


def test_only_runs_longer_than_the_running_work_s_age_are_drawn():
    # The busy work ran an hour already: the samples of half an hour say nothing of it.
    waiting = reason(_busy_cluster(runtimes=_similar(0.5, 0.5, 0.5, 2)), "job")
    assert waiting.estimated_start_low == NOW + timedelta(hours=1)


def test_work_without_a_max_runtime_gets_a_range_from_its_samples():
    waiting = reason(_busy_cluster(runtimes=SPREAD, busy_hours=None), "job")
    assert waiting.estimated_start is not None
    assert waiting.estimated_start_high <= NOW + timedelta(hours=2.5)


def test_the_same_seed_gives_the_same_range():
    first = reason(_busy_cluster(runtimes=SPREAD, seed=7), "job")
    again = reason(_busy_cluster(runtimes=SPREAD, seed=7), "job")
    assert first == again


def test_samples_change_no_admission_nor_preemption():
    snapshot, pending, running_work = mixed_cluster(seed=3)
    samples = RuntimeSamples(
        buckets={"all": tuple(h * HOUR for h in (0.5, 1, 2, 4, 8))},
        bucket_of={w.request.id: "all" for w in running_work},
    )
    plain = schedule(
        snapshot=snapshot, pending=pending, running=running_work, now=NOW, policy=Policy()
    )
    drawn = schedule(
        snapshot=replace(snapshot, runtimes=samples),
        pending=pending,
        running=running_work,
        now=NOW,
        policy=Policy(),
    )
    assert any(
        p.estimated_start != q.estimated_start
        for p, q in zip(plain.pending, drawn.pending, strict=True)
    )
    assert (plain.admissions, plain.preemptions) == (drawn.admissions, drawn.preemptions)


@given(
    runs=st.lists(st.floats(min_value=0.1, max_value=48), min_size=1, max_size=30),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
    busy_hours=st.sampled_from([None, 2, 6]),
)
def test_the_range_always_holds_its_most_likely_start(runs, seed, busy_hours):
    decisions = _busy_cluster(runtimes=_similar(*runs), busy_hours=busy_hours, seed=seed)
    waiting = reason(decisions, "job")
    if waiting.estimated_start is not None:
        assert waiting.estimated_start_low <= waiting.estimated_start
        high = waiting.estimated_start_high
        assert high is None or waiting.estimated_start <= high


# The intervals' stretch (split conformal prediction on estimates judged so far).

EARLY = datetime(2000, 1, 1, tzinfo=UTC)


def _judged(likely_offsets: list[tuple[int, int, int, int]]):
    """(low, likely, high, actual) minutes after NOW, as judged estimates."""
    minute = timedelta(minutes=1)
    return [
        (
            StartRange(NOW + likely * minute, NOW + low * minute, NOW + high * minute),
            NOW + at * minute,
        )
        for low, likely, high, at in likely_offsets
    ]


def test_too_few_judged_estimates_leave_the_intervals_as_drawn():
    assert interval_scale(_judged([(0, 10, 20, 90)] * 29)) == 1.0


def test_intervals_missed_by_twice_their_width_are_stretched_twice():
    # Each misses late by twice its upper side (10 min).
    assert interval_scale(_judged([(0, 10, 20, 30)] * 40)) == 2.0


def test_intervals_that_held_every_start_near_the_middle_shrink():
    assert interval_scale(_judged([(0, 10, 20, 15)] * 40)) == 0.5


def test_a_stretched_range_keeps_its_most_likely_start_and_never_starts_before_now():
    drawn = StartRange(
        NOW + timedelta(minutes=10), NOW + timedelta(minutes=5), NOW + timedelta(minutes=20)
    )
    stretched = drawn.stretched(3, now=NOW)
    assert (stretched.likely, stretched.low, stretched.high) == (
        drawn.likely,
        NOW,
        NOW + timedelta(minutes=40),
    )


@given(
    st.lists(
        st.tuples(
            st.integers(0, 100), st.integers(0, 100), st.integers(0, 100), st.integers(-50, 400)
        ),
        min_size=30,
        max_size=200,
    )
)
def test_stretched_by_the_scale_learnt_from_them_at_least_80_percent_hold(rows):
    judged = _judged([(likely - a, likely, likely + b, likely + at) for a, likely, b, at in rows])
    scale = interval_scale(judged)
    held = calibration(
        [(estimate.stretched(scale, now=EARLY), actual) for estimate, actual in judged]
    )
    # Misses beyond SCALE_MAX widths are let go: the scale is capped.
    assert held.within >= 0.8 or scale == SCALE_MAX
