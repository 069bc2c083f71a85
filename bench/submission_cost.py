"""What a submission costs the web process, measured in process: CPU seconds and statements.

The portal of bench/api_load.py (its seed: the burst cluster, one organization and project, an
API token), called through Django's test client as gunicorn would call it (the whole request:
middleware, token authentication, DRF, the service, the answer), on PostgreSQL and the cache
and broker of the environment. Figures: CPU milliseconds (`time.process_time`, this process
only: what the database does is not in it) and wall milliseconds per single submission (p50,
p95 of `--single`), statements per single submission; for batches of `--batch` and one job
array of `--array`: CPU and wall seconds and statements per request, and CPU milliseconds per
1,000 workloads. CPU time is what the load of the machine affects least: compare two commits
by their CPU figures measured in the same session. `--profile N` prints the N costliest calls
of the job array to stderr. It runs in a database made for the run, dropped after.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/portal \\
    CELERY_BROKER_URL=redis://127.0.0.1:6379/7 CACHE_URL=redis://127.0.0.1:6379/8 \\
    nice python bench/submission_cost.py
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext, setup_test_environment

from bench.api_load import BATCHES, PROJECT, seed, workload  # sets Django up
from bench.results import append_results, calibration_seconds
from portal.celery import app


def post(client: Client, path: str, body: dict, expected: int = 201) -> tuple[float, float, int]:
    """CPU seconds, wall seconds and statements of one request."""
    with CaptureQueriesContext(connection) as queries:
        cpu, wall = time.process_time(), time.perf_counter()
        response = client.post(path, body, content_type="application/json")
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    assert response.status_code == expected, response.content[:500]
    return cpu, wall, len(queries)


def ms(seconds: list[float], share: float) -> float:
    ordered = sorted(seconds)
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1000, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--single", type=int, default=200, help="single submissions timed")
    parser.add_argument("--batch", type=int, default=25, help="workloads per batch")
    parser.add_argument("--batches", type=int, default=20, help="batches timed")
    parser.add_argument("--array", type=int, default=10_000, help="workloads in one request")
    parser.add_argument("--profile", type=int, default=0, help="print the N costliest calls")
    parser.add_argument("--sort", default="cumulative", help="the profile's order (tottime)")
    parser.add_argument("--no-results", action="store_true", help="do not touch RESULTS.md")
    args = parser.parse_args()

    setup_test_environment()
    database = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        (token,) = seed(1)
        client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
        for n in range(5):  # the cycle's state row, the cache, the imports
            post(client, PROJECT, workload(f"warm-{n}"))
        singles = [post(client, PROJECT, workload(f"one-{n}")) for n in range(args.single)]
        batches = [
            post(
                client,
                BATCHES,
                {"workloads": [workload(f"b-{b}-{n}") for n in range(args.batch)]},
            )
            for b in range(args.batches)
        ]
        array = {"workloads": [workload(f"array-{n}") for n in range(args.array)]}
        profiler = cProfile.Profile() if args.profile else None
        if profiler:
            profiler.enable()
        array_cpu, array_wall, array_statements = post(client, BATCHES, array)
        if profiler:
            profiler.disable()
            stats = pstats.Stats(profiler, stream=sys.stderr)
            stats.sort_stats(args.sort).print_stats(args.profile)
    finally:
        app.control.purge()  # the tasks the submissions queued: no worker runs them here
        connection.creation.destroy_test_db(database, verbosity=0)
    batch_cpu = [cpu for cpu, _, _ in batches]
    single_cpu, single_wall = [c for c, _, _ in singles], [w for _, w, _ in singles]
    line = {
        "bench": "submission_cost",
        "calibration_s": calibration_seconds(),
        "single_cpu_ms": {"p50": ms(single_cpu, 0.5), "p95": ms(single_cpu, 0.95)},
        "single_wall_ms": {"p50": ms(single_wall, 0.5), "p95": ms(single_wall, 0.95)},
        "single_statements": statistics.median(s for _, _, s in singles),
        "batch": args.batch,
        "batch_cpu_ms_p50": ms(batch_cpu, 0.5),
        "batch_statements": statistics.median(s for _, _, s in batches),
        "array": args.array,
        "array_cpu_s": round(array_cpu, 2),
        "array_wall_s": round(array_wall, 2),
        "array_cpu_ms_per_1000": round(array_cpu / args.array * 1_000_000, 1),
        "array_statements": array_statements,
    }
    print(json.dumps(line))
    if not args.no_results:
        append_results(bench="submission_cost", argv=sys.argv, figures=line)


if __name__ == "__main__":
    main()
