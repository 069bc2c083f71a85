"""gpuctl logs against a live server: a workload's container logs from the simulated cluster,
one replica's, the tail, since a time, and followed while it runs."""

import threading
import time

import pytest

from .conftest import advance, cycle, job_file

pytestmark = pytest.mark.django_db(transaction=True)

JOB = job_file("train-logs", replicas=2, env={"SIMULATED_RUNTIME_SECONDS": 120})


@pytest.fixture
def running(gpuctl, logged_in, tmp_path):
    """train-logs, two replicas, 35 s into its run on the simulated cluster."""
    (tmp_path / "job.yaml").write_text(JOB)
    assert gpuctl("submit", "-f", str(tmp_path / "job.yaml")).exit_code == 0
    cycle()
    advance(35)
    return "train-logs"


def the_job_ends(after: float = 1.5) -> None:
    """In ``after`` seconds the simulated clock moves past the job's end; moments later beat's
    sync ends the workload and tears its containers down."""
    from django.db import connection

    from portal import clock

    time.sleep(after)
    clock.advance(seconds=120)
    time.sleep(2.5)
    advance(0)
    connection.close()


def test_logs_print_every_replicas_lines_prefixed(gpuctl, running):
    result = gpuctl("logs", running)
    lines = result.stdout.splitlines()
    assert result.exit_code == 0, result.output
    assert {line.split("]")[0] + "]" for line in lines} == {"[replica 0]", "[replica 1]"}


def test_logs_of_one_replica_are_that_replicas_alone(gpuctl, running):
    lines = gpuctl("logs", running, "--replica", "1").stdout.splitlines()
    assert lines and not any(line.startswith("[replica") for line in lines)
    assert lines == gpuctl("logs", running, "--replica", "1", "--tail", "100").stdout.splitlines()


def test_tail_prints_the_last_lines_only(gpuctl, running):
    every = gpuctl("logs", running, "--replica", "0").stdout.splitlines()
    assert (
        gpuctl("logs", running, "--replica", "0", "--tail", "2").stdout.splitlines() == every[-2:]
    )


def test_since_leaves_out_older_lines(gpuctl, running):
    every = gpuctl("logs", running, "--replica", "0").stdout.splitlines()
    recent = gpuctl("logs", running, "--replica", "0", "--since", "12s").stdout.splitlines()
    assert 0 < len(recent) < len(every) and every[-len(recent) :] == recent


def test_a_replica_the_workload_lacks_names_the_field_and_exits_1(gpuctl, running):
    result = gpuctl("logs", running, "--replica", "5")
    assert (result.exit_code, "replica:" in result.stderr) == (1, True)


def test_a_bad_since_is_bad_usage(gpuctl, running):
    assert gpuctl("logs", running, "--since", "yesterday").exit_code == 2


def test_logs_before_the_workload_starts_exit_1_with_the_reason(gpuctl, logged_in, tmp_path):
    (tmp_path / "job.yaml").write_text(JOB)
    gpuctl("submit", "-f", str(tmp_path / "job.yaml"))
    result = gpuctl("logs", "train-logs")
    assert (result.exit_code, "has not started yet" in result.stderr) == (1, True)


def test_follow_prints_lines_as_they_come_until_the_workload_ends(gpuctl, running):
    """While gpuctl follows, the simulated clock moves past the job's end (as time would),
    then beat's sync ends it: the lines written meanwhile arrive, then the answer ends and so
    does gpuctl."""
    before = gpuctl("logs", running, "--replica", "0").stdout.splitlines()
    mover = threading.Thread(target=the_job_ends)
    mover.start()

    followed = gpuctl("logs", running, "--replica", "0", "-f")
    mover.join()
    lines = followed.stdout.splitlines()
    assert followed.exit_code == 0, followed.output
    assert lines[: len(before)] == before and len(lines) > len(before)


def test_follow_asks_again_when_the_portal_ends_its_answer_until_the_workload_ends(
    gpuctl, running, settings
):
    """The portal ends a followed answer after PORTAL_LOGS_FOLLOW_MAX_SECONDS (1 s here)
    while the job still runs: gpuctl asks again, and again, until the job has ended (3 s
    later), and prints no line twice."""
    settings.PORTAL_LOGS_FOLLOW_MAX_SECONDS = 1

    def ends_later():
        from django.db import connection

        time.sleep(3)
        advance(120)
        connection.close()

    mover = threading.Thread(target=ends_later)
    started = time.monotonic()
    mover.start()
    followed = gpuctl("logs", running, "--replica", "0", "-f")
    mover.join()
    lines = followed.stdout.splitlines()
    assert (followed.exit_code, time.monotonic() - started >= 3) == (0, True), followed.output
    assert lines and len(set(lines)) == len(lines)


def test_the_logs_of_a_job_torn_down_are_its_kept_tail_said_so_on_stderr(gpuctl, running):
    advance(120)  # past its end: the sync ends it and removes its containers
    result = gpuctl("logs", running, "--replica", "0")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1].endswith("training finished in 120s")
    assert "Its containers were removed: the last lines kept at" in result.stderr


def test_following_a_torn_down_job_prints_its_kept_tail_and_ends(gpuctl, running):
    advance(120)
    result = gpuctl("logs", running, "--replica", "0", "-f")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1].endswith("training finished in 120s")
