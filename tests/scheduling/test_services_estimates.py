"""Start estimates in the cycle: the range is stored, each workload's first estimate is kept
with its actual start, and running work's remaining time is drawn from what similar finished
work ran."""

from datetime import timedelta

import pytest
from django.conf import settings

from portal import clock
from scheduling import selectors, services
from scheduling.models import Workload

pytestmark = pytest.mark.django_db

HOURS_2 = timedelta(hours=2)


@pytest.fixture
def full_for_two_hours(submit, cycle):
    """Eight one-node gangs with a two-hour max runtime fill all 64 H100 GPUs."""
    workloads = [submit(name=f"fill-{n}", gpus=8, max_runtime=HOURS_2) for n in range(8)]
    cycle()
    return workloads


def _end(workloads) -> None:
    for workload in workloads:
        services.workload_end(workload_id=workload.pk, state="Succeeded", reason="done")


def test_a_waiting_workload_stores_its_estimated_range(full_for_two_hours, submit, cycle):
    waiting = submit(name="waiting", gpus=8)
    cycle()
    waiting.refresh_from_db()
    full_for_two_hours[0].refresh_from_db()
    first_end = full_for_two_hours[0].admitted_at + HOURS_2
    assert (
        waiting.estimated_start_low
        == waiting.estimated_start
        == waiting.estimated_start_high
        == first_end
    )


def test_the_first_estimate_is_recorded_when_it_enters_the_queue(full_for_two_hours, submit, cycle):
    waiting = submit(name="waiting", gpus=8)
    cycle()
    waiting.refresh_from_db()
    assert waiting.first_estimate_at is not None
    assert waiting.first_estimate == waiting.estimated_start


def _longer_running_work() -> None:
    """The running work will run longer than it said: the next estimate is later."""
    Workload.objects.filter(name__startswith="fill-").update(max_runtime=HOURS_2 * 2)


def test_the_first_estimate_is_kept_while_later_ones_change(full_for_two_hours, submit, cycle):
    waiting = submit(name="waiting", gpus=8)
    cycle()
    waiting.refresh_from_db()
    first = waiting.first_estimate
    _longer_running_work()
    clock.advance(seconds=settings.PORTAL_PLACES_REFRESH_SECONDS)
    cycle()
    waiting.refresh_from_db()
    assert waiting.first_estimate == first != waiting.estimated_start


def test_a_moved_estimate_waits_for_the_places_refresh(full_for_two_hours, submit, cycle, settings):
    # The clock runs on between cycles: a refresh far longer than the step keeps it off the
    # boundary however slowly the test runs.
    settings.PORTAL_PLACES_REFRESH_SECONDS = 3600
    waiting = submit(name="waiting", gpus=8)
    cycle()
    waiting.refresh_from_db()
    written = waiting.estimated_start
    _longer_running_work()
    clock.advance(seconds=60)
    cycle()
    waiting.refresh_from_db()
    assert waiting.estimated_start == written


def test_a_moved_estimate_is_written_once_the_places_refresh_is_due(
    full_for_two_hours, submit, cycle
):
    waiting = submit(name="waiting", gpus=8)
    cycle()
    waiting.refresh_from_db()
    written = waiting.estimated_start
    _longer_running_work()
    clock.advance(seconds=settings.PORTAL_PLACES_REFRESH_SECONDS - 1)
    cycle()
    clock.advance(seconds=1)
    cycle()
    waiting.refresh_from_db()
    assert waiting.estimated_start > written


def test_the_actual_start_is_recorded_when_an_estimated_workload_is_admitted(
    full_for_two_hours, submit, cycle
):
    waiting = submit(name="waiting", gpus=8)
    cycle()
    clock.advance(seconds=1800)
    _end(full_for_two_hours[:1])
    cycle()
    waiting.refresh_from_db()
    assert waiting.first_estimate_actual == waiting.admitted_at is not None


def test_work_admitted_at_once_records_no_estimate(submit, cycle):
    at_once = submit(name="at-once", gpus=8)
    cycle()
    at_once.refresh_from_db()
    assert (at_once.first_estimate, at_once.first_estimate_actual) == (None, None)


def _finished(submit, name: str, *, hours: float, **fields) -> Workload:
    """A workload that ran ``hours`` from its admission and succeeded."""
    workload = submit(name=name, **fields)
    ended = clock.now()
    Workload.objects.filter(pk=workload.pk).update(
        state=Workload.State.SUCCEEDED,
        admitted_at=ended - timedelta(hours=hours),
        finished_at=ended,
    )
    return workload


def test_runtime_samples_come_from_similar_finished_work(submit):
    for n in range(10):
        _finished(submit, f"done-{n}", hours=n + 1, gpus=8)
    running = submit(name="running", gpus=8)
    samples = selectors.runtime_samples(workloads=[running], now=clock.now(), seed=1)
    bucket = samples.bucket_of[str(running.pk)]
    assert samples.buckets[bucket] == tuple(float(h * 3600) for h in range(1, 11))


def test_a_bucket_with_too_few_runs_gives_way_to_a_coarser_one(submit):
    for n in range(10):
        _finished(submit, f"done-{n}", hours=1, gpus=8)
    running = submit(name="running", gpus=4)
    samples = selectors.runtime_samples(workloads=[running], now=clock.now(), seed=1)
    assert samples.bucket_of[str(running.pk)] == f"{running.project.organization.slug}/training"


def test_cancelled_work_gives_no_runtime_sample(submit):
    for n in range(10):
        workload = _finished(submit, f"done-{n}", hours=1, gpus=8)
        Workload.objects.filter(pk=workload.pk).update(state=Workload.State.CANCELLED)
    samples = selectors.runtime_samples(workloads=[], now=clock.now(), seed=1)
    assert samples.buckets == {}


def _judged(submit, count: int, *, scale: float, missed_by: float) -> None:
    """``count`` started workloads whose first estimate (a 10-minute upper side, stretched by
    ``scale``) was missed late by ``missed_by`` of those sides."""
    now = clock.now()
    side = timedelta(minutes=10)
    for n in range(count):
        likely = now - timedelta(hours=1)
        Workload.objects.filter(pk=submit(name=f"judged-{n}", gpus=1).pk).update(
            first_estimate_at=likely - side,
            first_estimate=likely,
            first_estimate_low=likely - side,
            first_estimate_high=likely + side,
            first_estimate_scale=scale,
            first_estimate_actual=likely + missed_by * side,
        )


def test_intervals_are_stretched_by_how_far_recent_estimates_missed(submit):
    _judged(submit, 40, scale=1.0, missed_by=3)
    assert selectors.interval_scale(now=clock.now()) == 3.0


def test_the_stretch_learnt_counts_the_stretch_each_estimate_already_had(submit):
    # Missed by 1.5 of sides already stretched twice: the draws' own sides missed by 3.
    _judged(submit, 40, scale=2.0, missed_by=1.5)
    assert selectors.interval_scale(now=clock.now()) == 3.0


def test_the_first_estimate_keeps_the_stretch_it_was_given(submit, cycle, full_for_two_hours):
    _judged(submit, 40, scale=1.0, missed_by=3)
    waiting = submit(name="waiting", gpus=8)
    cycle()
    waiting.refresh_from_db()
    assert waiting.first_estimate_scale == 3.0
