"""Keep a command running: start it again whenever it exits, until told to stop.

    python -m portal.supervise celery -A portal worker --beat

`make serve` (the demo) runs its Celery worker so: a worker that dies (an unrecoverable error,
SIGKILL, the out-of-memory killer) is back within seconds, each restart logged. The command
runs in a process group of its own; when it exits, whatever it left behind in that group (an
embedded beat, pool processes) is killed before it starts again, so two beats never run at
once. SIGINT or SIGTERM stops the command (SIGINT to its group, as Ctrl-C; SIGKILL to what is
left after STOP_GRACE_SECONDS) and then this process, leaving nothing running.

A command that keeps dying at once is started again after a delay that doubles from 1 s up to
60 s, back to 1 s once it has run for a minute. Production leaves this to its process
manager (Kubernetes, compose's `restart:`)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

from portal import clock

# Ctrl-C stops everything within about this long: Celery's warm shutdown takes well under a
# second on a quiet machine; a task it was still running is lost as with any SIGKILL (the
# reconcilers finish a lost launch or teardown; periodic tasks come round again).
STOP_GRACE_SECONDS = 1.0
FIRST_DELAY_SECONDS = 1.0
MAX_DELAY_SECONDS = 60.0
# A run at least this long resets the delay: the command had started fine.
HEALTHY_RUN_SECONDS = 60.0


def log(message: str) -> None:
    print(f"supervise: {message}", file=sys.stderr, flush=True)


def group_kill(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)


class Supervisor:
    def __init__(self, command: list[str]) -> None:
        self.command = command
        self.child: subprocess.Popen | None = None
        self.stopping = False
        self.interrupted: int | None = None  # the child that was sent SIGINT

    def stop(self, signum, _frame) -> None:
        """SIGINT to the command's group, once, as a terminal's Ctrl-C would send it (Celery
        takes it for a warm shutdown; its pool processes ignore it)."""
        self.stopping = True
        self.interrupt()

    def interrupt(self) -> None:
        if self.child is not None and self.interrupted != self.child.pid:
            self.interrupted = self.child.pid
            group_kill(self.child.pid, signal.SIGINT)

    def start(self) -> None:
        self.child = subprocess.Popen(self.command, start_new_session=True)

    def reap(self) -> None:
        """The group of the command that exited: everything left in it is killed."""
        group_kill(self.child.pid, signal.SIGKILL)

    def stop_child(self) -> None:
        """SIGINT to the command's group; SIGKILL to what is left after the grace period."""
        self.interrupt()
        deadline = clock.monotonic() + STOP_GRACE_SECONDS
        while clock.monotonic() < deadline and self.child.poll() is None:
            time.sleep(0.05)
        group_kill(self.child.pid, signal.SIGKILL)
        self.child.wait()

    def run(self) -> int:
        signal.signal(signal.SIGINT, self.stop)
        signal.signal(signal.SIGTERM, self.stop)
        delay = FIRST_DELAY_SECONDS
        while not self.stopping:
            started = clock.monotonic()
            self.start()
            while not self.stopping and self.child.poll() is None:
                time.sleep(0.1)
            if self.stopping:
                break
            self.reap()
            ran = clock.monotonic() - started
            if ran >= HEALTHY_RUN_SECONDS:
                delay = FIRST_DELAY_SECONDS
            log(
                f"{self.command[0]} exited with status {self.child.returncode} after {ran:.0f} s;"
                f" starting it again in {delay:.0f} s"
            )
            resume = clock.monotonic() + delay
            while not self.stopping and clock.monotonic() < resume:
                time.sleep(0.1)
            delay = min(delay * 2, MAX_DELAY_SECONDS)
        if self.child is not None:
            self.stop_child()
        return 0


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    return Supervisor(argv).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
