"""The tail of each replica's log kept when an ended workload's cluster objects are deleted
(the simulated cluster): what is kept, its bounds, and that keeping it never stops a
teardown."""

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduling import services
from scheduling.cluster.specs import LogLine
from scheduling.models import Workload, WorkloadLogTail
from scheduling.services.log_tails import log_tail_bounded
from tenants.permissions import Caller

RUNTIME = {"SIMULATED_RUNTIME_SECONDS": "120"}


@pytest.fixture
def run_to_end(submit, cycle, advance):
    """train-1, two replicas, runs its 120 s to the end: the status sync makes it Succeeded and
    deletes its objects, as the beat task does."""

    def run() -> Workload:
        submit(name="train-1", gpus=8, replicas=2, env=RUNTIME)
        cycle()
        advance(200)
        return Workload.objects.get(name="train-1")

    return run


def _tails(workload) -> list[WorkloadLogTail]:
    return list(WorkloadLogTail.objects.filter(workload=workload))


@pytest.mark.django_db
def test_the_status_sync_that_ends_a_workload_deletes_its_objects_and_keeps_its_tails(
    run_to_end, cluster
):
    workload = run_to_end()
    assert workload.state == Workload.State.SUCCEEDED and workload.objects_deleted_at
    assert list(cluster.logs(namespace="acme-ai-dev", name="train-1", kind="Job")) == []
    assert [tail.replica for tail in _tails(workload)] == [0, 1]


@pytest.mark.django_db
def test_the_whole_log_of_each_replica_is_kept_when_it_is_short(run_to_end):
    tails = _tails(run_to_end())
    assert [(len(tail.lines), tail.truncated, tail.failure) for tail in tails] == [
        (2 + 11 + 2, False, "")
    ] * 2
    assert tails[0].lines[-1][1].endswith("training finished in 120s")


@pytest.mark.django_db
def test_a_kept_tail_is_the_last_lines_at_most_the_lines_setting(run_to_end, settings):
    settings.PORTAL_LOGS_KEPT_LINES = 4
    tails = _tails(run_to_end())
    assert [(len(tail.lines), tail.truncated) for tail in tails] == [(4, True)] * 2
    assert tails[1].lines[-1][1].endswith("training finished in 120s")


@pytest.mark.django_db
def test_a_kept_tail_is_at_most_the_bytes_setting(run_to_end, settings):
    settings.PORTAL_LOGS_KEPT_BYTES = 500
    for tail in _tails(run_to_end()):
        assert sum(len(text.encode()) + 1 for _, text in tail.lines) <= 500
        assert tail.truncated and tail.lines


@pytest.mark.django_db
def test_a_second_teardown_changes_nothing_that_was_kept(run_to_end, cluster):
    workload = run_to_end()
    kept = [(tail.lines, tail.captured_at) for tail in _tails(workload)]
    services.workload_objects_delete(workload_id=workload.pk, backend=cluster)
    assert [(tail.lines, tail.captured_at) for tail in _tails(workload)] == kept


@pytest.mark.django_db
def test_a_workload_cancelled_before_its_launch_keeps_no_tail(submit, cluster, mia):
    workload = submit(name="early", gpus=8)
    services.scheduling_cycle_run()  # admitted, not launched
    services.workload_cancel(caller=Caller(user=mia), workload=Workload.objects.get(pk=workload.pk))
    services.workload_objects_delete(workload_id=workload.pk, backend=cluster)
    assert _tails(workload) == []


def _lines(texts: list[str]) -> list[LogLine]:
    start = datetime(2026, 12, 1, tzinfo=UTC)
    return [
        LogLine(at=start + timedelta(seconds=n), replica=0, text=text)
        for n, text in enumerate(texts)
    ]


@given(
    texts=st.lists(st.text(max_size=40), max_size=30),
    lines_max=st.integers(min_value=1, max_value=40),
    bytes_max=st.integers(min_value=2, max_value=400),
)
def test_a_bounded_tail_is_the_logs_end_within_both_bounds(texts, lines_max, bytes_max):
    lines = _lines(texts)
    kept, truncated = log_tail_bounded(lines, lines_max=lines_max, bytes_max=bytes_max)
    assert len(kept) <= lines_max
    assert sum(len(line.text.encode()) + 1 for line in kept) <= bytes_max
    assert bool(lines) == bool(kept)
    if lines:
        assert kept[-1].text == lines[-1].text or lines[-1].text.endswith(kept[-1].text)
    assert kept[:-1] == lines[len(lines) - len(kept) : -1]
    assert truncated == (kept != lines)
