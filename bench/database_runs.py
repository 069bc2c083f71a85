"""What the benchmarks that fill a database share: each run on a test database of DATABASE_URL's
server made for it and dropped after, and its JSON line naming the database."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable

from django.db import connection
from django.test.utils import setup_test_environment

from bench.results import append_results, calibration_seconds


def database_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every such benchmark takes: how many organizations, the seed, and whether
    to leave RESULTS.md alone."""
    parser.add_argument("--organizations", type=int, default=100)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--no-results", action="store_true", help="do not touch RESULTS.md")


def on_test_databases(
    bench: str,
    runs: Iterable[Callable[[], dict]],
    *,
    record: bool,
    keep: bool = False,
    **context,
) -> None:
    """Each of ``runs`` on a fresh test database; print its line (the bench, the calibration,
    the database, ``context``, then its figures) and, if ``record``, add it to RESULTS.md.
    ``keep``: one database of the bench's own name, made if missing and kept after (never
    recorded: the runs that fill it are timed apart from the ones that find it full)."""
    setup_test_environment()
    if keep:
        # Not the test database's usual name, which the test suite makes and drops.
        test = connection.settings_dict["TEST"]
        test["NAME"] = f"{connection.settings_dict['NAME']}_{bench}_kept"
        record = False
    for run in runs:
        database = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=keep)
        try:
            figures = run()
        finally:
            if not keep:
                connection.creation.destroy_test_db(database, verbosity=0)
        line = {
            "bench": bench,
            "calibration_s": calibration_seconds(),
            "database": connection.vendor,
            **context,
            **figures,
        }
        print(json.dumps(line), flush=True)
        if record:
            append_results(bench=bench, argv=sys.argv, figures=line)
