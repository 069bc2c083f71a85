"""The REST API under load, and a burst of submissions through to running workloads.

Starts the portal as an operator would: gunicorn (`--workers`) and a Celery worker with beat,
on PostgreSQL and Redis, against a simulated cluster of 5,280 H100s
(deploy/clusters/burst.yaml). Then, with API tokens (one per client):
1. one client alone: submissions, then (once they are launched) list pages and batches of
   `--batch` submissions (p50, p95 and p99 of each; workloads per second of the batches);
2. the burst: `--clients` clients submit `--burst` one-GPU workloads one by one as fast as
   they can (submissions per second, p50/p95/p99, errors);
3. the same clients read list pages (pages per second, p50/p95/p99);
4. the drain: seconds from the last submission until every accepted workload is launched and
   every broker queue is empty, and a check that every accepted workload is in the database;
5. the same burst again in batches of `--batch` (workloads per second, p50/p95/p99 of the
   requests), and its drain;
6. one job array of `--array` workloads in one request (its seconds, workloads per second);
   the cluster is nearly full by then, so they wait, and no drain is measured for them.
The portal runs in a database made for the run (`test_<name>` of DATABASE_URL), dropped after.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/portal \\
    CELERY_BROKER_URL=redis://127.0.0.1:6379/7 CACHE_URL=redis://127.0.0.1:6379/8 \\
    nice python bench/api_load.py
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings.local")
os.environ.setdefault("DEBUG", "false")
CLUSTER = REPO / "deploy" / "clusters" / "burst.yaml"
os.environ["PORTAL_SIMULATED_CLUSTER"] = str(CLUSTER)

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

from bench.results import append_results, calibration_seconds  # noqa: E402
from portal.celery import app  # noqa: E402
from scheduling import services as scheduling  # noqa: E402
from scheduling.backends import simulated_backend  # noqa: E402
from scheduling.models import GpuClass, QuotaGrant, Workload  # noqa: E402
from tenants import services as tenancy  # noqa: E402
from tenants.permissions import Caller  # noqa: E402

PROJECT = "/api/v1/organizations/load/projects/burst/workloads/"
BATCHES = "/api/v1/organizations/load/projects/burst/workload-batches/"


def percentiles(seconds: list[float]) -> dict:
    if not seconds:
        return {}
    ordered = sorted(seconds)

    def at(share: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1000, 1)

    return {"p50_ms": at(0.50), "p95_ms": at(0.95), "p99_ms": at(0.99)}


class Client:
    """One API client with its own token and connection."""

    def __init__(self, port: int, token: str) -> None:
        self.port, self.token = port, token
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, Any, float]:
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        started = time.perf_counter()
        for attempt in range(2):
            try:
                self.connection.request(
                    method, path, body=json.dumps(body) if body else None, headers=headers
                )
                response = self.connection.getresponse()
                data = response.read()
                break
            except (http.client.HTTPException, OSError):
                # gunicorn's sync workers close each connection: open another and go on.
                self.connection.close()
                self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
                if attempt:
                    raise
        elapsed = time.perf_counter() - started
        return response.status, json.loads(data or b"{}"), elapsed


def workload(name: str) -> dict:
    return {
        "name": name,
        "kind": "training",
        "tier": "training",
        "image": "nvcr.io/nvidia/pytorch:25.01-py3",
        "gpu_classes": ["H100-80GB"],
        "gpus": 1,
        "env": {"SIMULATED_RUNTIME_SECONDS": "1000000"},
    }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def seed(clients: int) -> list[str]:
    """The cluster, an organization with a project and a quota for every GPU; one API token
    per client."""
    backend = simulated_backend(description_path=CLUSTER)
    scheduling.cluster_description_apply(path=CLUSTER)
    scheduling.inventory_sync(backend=backend)
    owner = tenancy.user_create(email="owner@load.example", password="load-bench-only")
    caller = Caller(user=owner)
    organization = tenancy.organization_create(caller=caller, slug="load", name="Load")
    project = tenancy.project_create(
        caller=caller, organization=organization, slug="burst", name="Burst"
    )
    scheduling.project_provision(project_id=project.pk, backend=backend)
    gpus = 8 * len(backend.list_nodes())
    QuotaGrant.objects.create(
        organization=organization,
        gpu_class=GpuClass.objects.get(name="H100-80GB"),
        guarantee=gpus,
        limit=gpus,
    )
    return [
        tenancy.token_issue(
            caller=caller, organization=organization, name=f"client-{n}", scope="write"
        )[1]
        for n in range(clients)
    ]


def start(command: list[str], env: dict, log: str = "") -> subprocess.Popen:
    """Start `command` in a session of its own; its output appended to the file `log`, or
    dropped."""
    output = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115 (the child's)
    return subprocess.Popen(
        command,
        cwd=REPO,
        env=env,
        stdout=output,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)


def in_parallel(clients: list[Client], work) -> tuple[list[tuple[int, dict, float]], float]:
    """Run work(client, index) on every client in its own thread; all answers, wall seconds."""
    answers: list[list] = [[] for _ in clients]
    threads = [
        threading.Thread(target=lambda i=i: answers[i].extend(work(clients[i], i)))
        for i in range(len(clients))
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [a for client_answers in answers for a in client_answers], time.perf_counter() - started


def queues_empty() -> bool:
    with app.connection_for_write() as broker:
        channel = broker.default_channel
        return all(
            channel.queue_declare(queue=queue.name).message_count == 0
            for queue in settings.CELERY_TASK_QUEUES
        )


def batches_of(prefix: str, *, count: int, size: int):
    """Work for in_parallel: each client submits `count` workloads in batches of `size`."""

    def submit(client: Client, index: int) -> list:
        names = [f"{prefix}-{index}-{n}" for n in range(count)]
        return [
            client.request(
                "POST", BATCHES, {"workloads": [workload(name) for name in names[at : at + size]]}
            )
            for at in range(0, count, size)
        ]

    return submit


def drain(prefix: str, *, since: float, timeout: float) -> float | None:
    """Seconds from `since` until every workload named `prefix`... is launched and every
    queue is empty; None if that takes longer than `timeout`."""
    ours = Workload.objects.filter(name__startswith=prefix)
    while time.perf_counter() - since < timeout:
        if not ours.filter(launched_at__isnull=True).exists() and queues_empty():
            return time.perf_counter() - since
        time.sleep(0.5)
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--burst", type=int, default=2_000, help="workloads submitted at once")
    parser.add_argument("--single", type=int, default=100, help="requests of the lone client")
    parser.add_argument("--pages", type=int, default=400, help="list pages read in the load")
    parser.add_argument("--batch", type=int, default=25, help="workloads per batch request")
    parser.add_argument("--array", type=int, default=10_000, help="workloads in one request")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument(
        "--worker-nice",
        type=int,
        default=0,
        help="niceness of the Celery worker: with 10, the web answers first on shared cores",
    )
    parser.add_argument("--drain-timeout", type=float, default=600)
    parser.add_argument(
        "--worker-log", default="", help="append the Celery worker's log (level INFO) to this file"
    )
    parser.add_argument("--no-results", action="store_true", help="do not touch RESULTS.md")
    args = parser.parse_args()
    if connection.vendor != "postgresql" or not settings.CELERY_BROKER_URL.startswith("redis"):
        raise SystemExit("Set DATABASE_URL to PostgreSQL and CELERY_BROKER_URL to Redis.")

    setup_test_environment()
    database = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    processes: list[subprocess.Popen] = []
    try:
        tokens = seed(args.clients)
        db = connection.settings_dict
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "portal.settings.local",
            "DEBUG": "false",
            "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
            "PORTAL_TOKEN_THROTTLE_RATE": "1000000/min",
        }
        app.control.purge()
        port = free_port()
        processes.append(
            start(
                [
                    *(sys.executable, "-m", "gunicorn", "portal.wsgi"),
                    f"--workers={args.workers}",
                    f"--bind=127.0.0.1:{port}",
                    # The job array's one request outlasts the default 30 s on a loaded machine.
                    "--timeout=300",
                ],
                env,
            )
        )
        processes.append(
            start(
                [
                    *("nice", "-n", str(args.worker_nice)),
                    *(sys.executable, "-m", "celery", "-A", "portal", "worker", "--beat"),
                    "--concurrency=2",
                    f"--loglevel={'INFO' if args.worker_log else 'WARNING'}",
                ],
                env,
                args.worker_log,
            )
        )
        clients = [Client(port, token) for token in tokens]
        for _ in range(100):
            try:
                clients[0].request("GET", PROJECT + "?page_size=1")
                break
            except OSError:
                time.sleep(0.2)

        lone = clients[0]
        lone_submits = [
            lone.request("POST", PROJECT, workload(f"lone-{n}"))[2] for n in range(args.single)
        ]
        # Alone means with nothing else running: the lone submissions launched first.
        drain("lone-", since=time.perf_counter(), timeout=args.drain_timeout)
        lone_lists = [lone.request("GET", PROJECT)[2] for _ in range(args.single)]
        lone_batches, lone_batch_wall = in_parallel(
            [lone], batches_of("lone-batch", count=10 * args.single, size=args.batch)
        )

        per_client = args.burst // args.clients

        def submit_all(client: Client, index: int) -> list:
            return [
                client.request("POST", PROJECT, workload(f"burst-{index}-{n}"))
                for n in range(per_client)
            ]

        submitted, submit_wall = in_parallel(clients, submit_all)
        last_submission = time.perf_counter()
        accepted = [answer["id"] for status, answer, _ in submitted if status == 201]

        def read_pages(client: Client, index: int) -> list:
            pages = args.pages // args.clients
            return [client.request("GET", f"{PROJECT}?page={1 + n % 5}") for n in range(pages)]

        listed, list_wall = in_parallel(clients, read_pages)
        drained = drain("burst-", since=last_submission, timeout=args.drain_timeout)

        batches, batch_wall = in_parallel(
            clients, batches_of("batch", count=per_client, size=args.batch)
        )
        last_batch = time.perf_counter()
        batch_accepted = [w["id"] for status, answer, _ in batches if status == 201 for w in answer]
        batch_drained = drain("batch-", since=last_batch, timeout=args.drain_timeout)
        names = [f"array-{n}" for n in range(args.array)]
        array_status, array_answer, array_seconds = lone.request(
            "POST", BATCHES, {"workloads": [workload(name) for name in names]}
        )
        array_accepted = [w["id"] for w in array_answer] if array_status == 201 else []
        stored = set(map(str, Workload.objects.values_list("pk", flat=True)))
        line = {
            "bench": "api_load",
            "calibration_s": calibration_seconds(),
            "gunicorn_workers": args.workers,
            "worker_nice": args.worker_nice,
            "clients": args.clients,
            "lone_submit": percentiles(lone_submits),
            "lone_list": percentiles(lone_lists),
            "lone_batch": percentiles([seconds for *_, seconds in lone_batches]),
            "lone_batch_workloads_per_s": round(10 * args.single / lone_batch_wall, 1),
            "lone_batch_errors": sorted({status for status, *_ in lone_batches if status != 201}),
            "burst": len(submitted),
            "burst_accepted": len(accepted),
            "burst_errors": sorted({status for status, *_ in submitted if status != 201}),
            "submissions_per_s": round(len(submitted) / submit_wall, 1),
            "burst_submit": percentiles([seconds for *_, seconds in submitted]),
            "list_pages_per_s": round(len(listed) / list_wall, 1),
            "burst_list": percentiles([seconds for *_, seconds in listed]),
            "list_errors": sorted({status for status, *_ in listed if status != 200}),
            "all_launched_and_queues_empty_after_s": drained and round(drained, 1),
            "batch_size": args.batch,
            "batch_accepted": len(batch_accepted),
            "batch_errors": sorted({status for status, *_ in batches if status != 201}),
            "batch_workloads_per_s": round(len(batch_accepted) / batch_wall, 1),
            "batch_request": percentiles([seconds for *_, seconds in batches]),
            "batch_all_launched_and_queues_empty_after_s": batch_drained
            and round(batch_drained, 1),
            "array": args.array,
            "array_status": array_status,
            "array_request_s": round(array_seconds, 2),
            "array_workloads_per_s": round(len(array_accepted) / array_seconds, 1),
            "accepted_missing_from_database": len(
                set(accepted + batch_accepted + array_accepted) - stored
            ),
            "launched": Workload.objects.filter(launched_at__isnull=False).count(),
        }
    finally:
        for process in processes:
            stop(process)
        connection.creation.destroy_test_db(database, verbosity=0)
    print(json.dumps(line))
    if not args.no_results:
        append_results(bench="api_load", argv=sys.argv, figures=line)


if __name__ == "__main__":
    main()
