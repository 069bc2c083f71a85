"""Bursts of tasks through an embedded Celery broker while a real worker consumes them.

Several producer processes send `--tasks` tasks in bursts, spread over two queues, while a
Celery worker (prefork, as `make demo` runs it: acks late, prefetch 1) takes them; each task
appends its number to a file. Prints one JSON line: tasks sent, done, lost (sent, never done),
run twice, whether the worker is still alive, and its unrecoverable error if it died (which ends
the run: nothing would take the rest).

    nice python bench/broker_stress.py --broker filesystem   # the demo's broker until issue 21
    nice python bench/broker_stress.py --broker sqlite       # the demo's broker since
    nice python bench/broker_stress.py --broker sqlite --record   # appends to bench/RESULTS.md

The worker runs this file as its Celery app (`-A bench.broker_stress`), configured from the
environment variables the parent sets. Nothing but local files and processes is used.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from celery import Celery  # noqa: E402

_settings = os.environ.get("DJANGO_SETTINGS_MODULE")
from portal.broker import POLLING_INTERVAL, embedded_broker  # noqa: E402

# Importing portal names its Django settings; this app is no Django project (Celery would set
# Django up in the worker).
if _settings is None:
    os.environ.pop("DJANGO_SETTINGS_MODULE", None)

QUEUES = ("bench-a", "bench-b")


def broker_config(kind: str, folder: Path) -> tuple[str, str | None, dict]:
    """The broker URL, transport and transport options of `kind`, in `folder`."""
    if kind == "filesystem":
        # The demo's configuration until issue 21 (portal/settings/base.py then), polled as
        # often as the SQLite broker is.
        folder.mkdir(parents=True, exist_ok=True)
        return (
            "filesystem://localhost//",
            None,
            {
                "data_folder_in": str(folder),
                "data_folder_out": str(folder),
                "control_folder": str(folder / "control"),
                "store_processed": False,
                "polling_interval": POLLING_INTERVAL,
            },
        )
    if kind == "sqlite":  # the demo's since issue 21 (portal/settings/base.py)
        url = f"sqlite:///{folder / 'broker.sqlite3'}"
        return url, *embedded_broker(url)
    return kind, None, {}  # any other broker URL, e.g. redis://127.0.0.1:6379/9


def make_app() -> Celery:
    app = Celery("broker_stress")
    app.conf.update(
        broker_url=os.environ.get("BENCH_BROKER_URL", "memory://"),
        broker_transport=os.environ.get("BENCH_BROKER_TRANSPORT") or None,
        broker_transport_options=json.loads(os.environ.get("BENCH_TRANSPORT_OPTIONS", "{}")),
        task_serializer="json",
        accept_content=["json"],
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_default_queue=QUEUES[0],
        worker_hijack_root_logger=False,
    )
    return app


app = make_app()


@app.task(name="bench.record")
def record(number: int) -> None:
    """Append the task's number to the results file (one write: lines never interleave)."""
    handle = os.open(os.environ["BENCH_DONE_FILE"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(handle, f"{number}\n".encode())
    finally:
        os.close(handle)


def produce(first: int, count: int, burst: int, pause: float, sent, errors) -> None:
    """Send tasks first..first+count-1 in bursts of `burst`, `pause` seconds between."""
    producer = make_app()
    task = producer.signature("bench.record")
    for start in range(first, first + count, burst):
        for number in range(start, min(start + burst, first + count)):
            try:
                task.apply_async(args=[number], queue=QUEUES[number % len(QUEUES)])
                with sent.get_lock():
                    sent.value += 1
            except Exception:
                with errors.get_lock():
                    errors.value += 1
                traceback.print_exc()
        time.sleep(pause)


def done_numbers(path: Path) -> list[int]:
    if not path.exists():
        return []
    return [int(line) for line in path.read_text().split() if line.strip()]


def run(
    *, kind: str, tasks: int, producers: int, burst: int, pause: float, stall_seconds: float
) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="broker-stress-"))
    url, transport, options = broker_config(kind, folder / "broker")
    done_file = folder / "done.txt"
    os.environ.update(
        BENCH_BROKER_URL=url,
        BENCH_BROKER_TRANSPORT=transport or "",
        BENCH_TRANSPORT_OPTIONS=json.dumps(options),
        BENCH_DONE_FILE=str(done_file),
    )
    log_path = folder / "worker.log"
    with log_path.open("w") as log:
        worker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "bench.broker_stress",
                "worker",
                "--concurrency=2",
                "--without-heartbeat",
                "--without-gossip",
                "--without-mingle",
                "--loglevel=WARNING",
                "-Q",
                ",".join(QUEUES),
            ],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    started = time.perf_counter()
    sent, errors = multiprocessing.Value("i", 0), multiprocessing.Value("i", 0)
    share = tasks // producers
    processes = [
        multiprocessing.Process(
            target=produce,
            args=(index * share, share if index < producers - 1 else tasks - index * share),
            kwargs={"burst": burst, "pause": pause, "sent": sent, "errors": errors},
        )
        for index in range(producers)
    ]
    for process in processes:
        process.start()
    # The producers send; a worker that dies meanwhile ends the run (what it had not taken
    # counts as lost).
    while any(process.is_alive() for process in processes):
        if worker.poll() is not None:
            for process in processes:
                process.terminate()
        time.sleep(0.5)
    for process in processes:
        process.join()
    sent_seconds = time.perf_counter() - started
    # Wait for the worker to finish: until every task is done, the worker died, or nothing
    # was done for `stall_seconds` (bounded: the run always ends).
    last_count, last_progress = -1, time.monotonic()
    while True:
        count = len(done_numbers(done_file))
        if count != last_count:
            last_count, last_progress = count, time.monotonic()
        if count >= sent.value or worker.poll() is not None:
            break
        if time.monotonic() - last_progress > stall_seconds:
            break
        time.sleep(0.5)
    seconds = time.perf_counter() - started
    alive = worker.poll() is None
    if alive:
        os.killpg(worker.pid, signal.SIGTERM)
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
    numbers = done_numbers(done_file)
    unique = set(numbers)
    log_text = log_path.read_text()
    fatal = [line for line in log_text.splitlines() if "Unrecoverable error" in line]
    return {
        "bench": "broker_stress",
        "broker": kind,
        "tasks": tasks,
        "producers": producers,
        "burst": burst,
        "pause_s": pause,
        "sent": sent.value,
        "send_errors": errors.value,
        "done": len(unique),
        "lost": sent.value - len(unique & set(range(tasks))),
        "run_twice": len(numbers) - len(unique),
        "worker_alive_at_end": alive,
        "worker_fatal": fatal[0].split("Unrecoverable error:", 1)[1].strip()[:120] if fatal else "",
        "send_seconds": round(sent_seconds, 1),
        "seconds": round(seconds, 1),
        "tasks_per_s": round(len(unique) / seconds, 1) if seconds else 0.0,
        "log": str(log_path),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--broker", default="sqlite", help="filesystem, sqlite, or a broker URL")
    parser.add_argument("--tasks", type=int, default=20_000)
    parser.add_argument("--producers", type=int, default=4)
    parser.add_argument("--burst", type=int, default=5, help="tasks a producer sends at once")
    parser.add_argument("--pause", type=float, default=0.2, help="seconds between bursts")
    parser.add_argument(
        "--stall-seconds", type=float, default=60, help="give up after this long without progress"
    )
    parser.add_argument("--record", action="store_true", help="append to bench/RESULTS.md")
    arguments = parser.parse_args()
    from bench.results import append_results, calibration_seconds

    line = {
        **run(
            kind=arguments.broker,
            tasks=arguments.tasks,
            producers=arguments.producers,
            burst=arguments.burst,
            pause=arguments.pause,
            stall_seconds=arguments.stall_seconds,
        ),
        "calibration_s": calibration_seconds(),
    }
    print(json.dumps(line))
    if arguments.record:
        append_results(bench="broker_stress", argv=sys.argv, figures=line)


if __name__ == "__main__":
    main()
