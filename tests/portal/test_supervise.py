"""`make serve` keeps its worker running (portal/supervise.py): a worker that dies is started
again, with whatever it left in its process group killed first; SIGINT (Ctrl-C) or SIGTERM
stops the command and the supervisor, leaving nothing running. The command here stands in for
the worker: it records its pid and that of a child it leaves in its group (as the embedded beat
is), then waits."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

WORKER = textwrap.dedent(
    """
    import os, subprocess, sys, time
    beat = subprocess.Popen(["sleep", "600"])
    with open(sys.argv[1], "a") as starts:
        starts.write(f"{os.getpid()} {beat.pid}\\n")
    time.sleep(600)
    """
)


def alive(pid: int) -> bool:
    """Running: it exists and is not a zombie waiting to be reaped."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def wait_for(condition, *, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"condition not met within {timeout} s")


def starts(path: Path) -> list[tuple[int, int]]:
    if not path.exists():
        return []
    return [tuple(map(int, line.split())) for line in path.read_text().splitlines()]


@pytest.fixture
def supervised(tmp_path):
    """The supervisor running the stand-in worker; yields (supervisor, starts file)."""
    record = tmp_path / "starts"
    supervisor = subprocess.Popen(
        [sys.executable, "-m", "portal.supervise", sys.executable, "-c", WORKER, str(record)],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        wait_for(lambda: starts(record))
        yield supervisor, record
    finally:
        if supervisor.poll() is None:
            supervisor.terminate()
            supervisor.wait(timeout=60)
        for worker, beat in starts(record):
            for pid in (worker, beat):
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)


def test_a_worker_killed_is_started_again(supervised):
    _supervisor, record = supervised
    (worker, _), *_ = starts(record)
    os.kill(worker, signal.SIGKILL)
    (_, _), (again, _) = wait_for(lambda: starts(record) if len(starts(record)) == 2 else None)
    assert again != worker and alive(again)


def test_what_a_dead_worker_left_in_its_group_is_killed_before_it_starts_again(supervised):
    _supervisor, record = supervised
    (worker, beat), *_ = starts(record)
    os.kill(worker, signal.SIGKILL)
    wait_for(lambda: len(starts(record)) == 2)
    assert not alive(beat)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_signal_ends_the_worker_and_the_supervisor_leaving_nothing_running(supervised, stop):
    supervisor, record = supervised
    (worker, beat), *_ = starts(record)
    supervisor.send_signal(stop)
    assert supervisor.wait(timeout=60) == 0
    assert [alive(worker), alive(beat), len(starts(record))] == [False, False, 1]


def test_each_restart_is_logged_with_the_exit_status(supervised):
    supervisor, record = supervised
    (worker, _), *_ = starts(record)
    os.kill(worker, signal.SIGKILL)
    wait_for(lambda: len(starts(record)) == 2)
    supervisor.terminate()
    _, errors = supervisor.communicate(timeout=60)
    assert "exited with status -9" in errors
    assert "starting it again in 1 s" in errors
