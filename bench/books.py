"""The operator's books at volume: a month of the metering benchmark's placements on its 1,000
nodes of 8 GPUs (``bench/metering.py``'s data: N placements for 100 organizations, as long as
the Alibaba trace's GPU pods ran), with every node's availability recorded (one node in ten
cordoned or down for a few hours), reservations and quota guarantees; the pool's month
allocated by category (``billing.selectors.pool_allocation``), on the database of
DATABASE_URL (a test database made for the run and dropped after).

Prints one JSON line per size: the seconds to allocate (reading the rows included), the
categories' GPU-hours, and whether they add up to the pool's hours exactly (to the
microsecond); and the seconds to make the key under which an ended month's books are kept
(``books_inputs_key``: what a request for an unchanged ended month costs instead of the
allocation). The issue's target: a 1,000-node month in under 60 s. ``--keep`` keeps the
seeded database for the next ``--keep`` run, which only allocates (and records nothing).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/portal \
        nice python bench/books.py --sizes 1000000
"""

from __future__ import annotations

import argparse
import random
import sys
from datetime import timedelta
from decimal import Decimal
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from django.db import transaction  # noqa: E402

from bench.database_runs import database_arguments, on_test_databases  # noqa: E402
from bench.metering import MONTH, MONTH_START, seed, timed  # noqa: E402 (sets Django up)
from billing import selectors, services  # noqa: E402
from billing.allocation import UNITS_PER_GPU  # noqa: E402
from billing.models import UsageInterval  # noqa: E402
from scheduling.models import (  # noqa: E402
    Node,
    NodeAvailability,
    NodePool,
    QuotaGrant,
    Reservation,
)
from scheduling.services import quota_grant_history_record  # noqa: E402
from tenants.models import Organization  # noqa: E402

GPUS = 8


def history(rng: random.Random) -> None:
    """Each node available all month, but one in ten down or cordoned for 1 to 12 hours once;
    ten reservations of 8 to 64 GPUs for 1 to 5 days; a guarantee of 8 to 32 GPUs for a
    quarter of the organizations."""
    pool = NodePool.objects.get()
    spans = []
    for node in Node.objects.order_by("name"):
        cuts = [(NodeAvailability.State.AVAILABLE, MONTH_START)]
        if rng.random() < 0.1:
            down = MONTH_START + timedelta(
                seconds=rng.randrange(int(MONTH.total_seconds()) - 86400)
            )
            state = rng.choice([NodeAvailability.State.CORDONED, NodeAvailability.State.NOT_READY])
            cuts += [
                (state, down),
                (NodeAvailability.State.AVAILABLE, down + timedelta(hours=rng.randint(1, 12))),
            ]
        for (state, starts_at), following in zip(
            cuts, [*cuts[1:], (None, MONTH_START + MONTH)], strict=True
        ):
            spans.append(
                NodeAvailability(
                    node=node,
                    pool=pool,
                    state=state,
                    gpu_count=GPUS,
                    starts_at=starts_at,
                    ends_at=following[1],
                )
            )
    NodeAvailability.objects.bulk_create(spans, batch_size=5_000)
    organizations = list(Organization.objects.order_by("slug"))
    for _ in range(10):
        starts_at = MONTH_START + timedelta(hours=rng.randrange(24 * 25))
        Reservation.objects.create(
            organization=rng.choice(organizations),
            gpu_class=pool.gpu_class,
            pool=pool,
            gpus=rng.choice((8, 16, 32, 64)),
            starts_at=starts_at,
            ends_at=starts_at + timedelta(days=rng.randint(1, 5)),
            state=Reservation.State.COMPLETED,
        )
    for organization in organizations[::4]:
        guarantee = rng.choice((8, 16, 32))
        grant = QuotaGrant.objects.create(
            organization=organization,
            gpu_class=pool.gpu_class,
            guarantee=guarantee,
            limit=guarantee * 2,
        )
        # The books read the guarantees in force from the grants' history: in force all month.
        with transaction.atomic():
            quota_grant_history_record(grant=grant, now=MONTH_START)


def run(size: int, organizations: int, seed_value: int) -> dict:
    if not Node.objects.exists():
        seed(placements=size, organizations=organizations, seed=seed_value)
        services.usage_intervals_sync()
        history(random.Random(seed_value))
    elif UsageInterval.objects.count() != size:
        # A kept database (--keep) seeded for another size.
        raise SystemExit(f"the kept database holds another month than {size} placements'")
    pool = NodePool.objects.get()
    allocate_s, allocation = timed(
        lambda: selectors.pool_allocation(
            pool=pool, starts_at=MONTH_START, ends_at=MONTH_START + MONTH
        )
    )
    inputs_key_s, _ = timed(lambda: selectors.books_inputs_key(MONTH_START, MONTH_START + MONTH))
    pool_units = Node.objects.count() * GPUS * UNITS_PER_GPU * (MONTH // timedelta(microseconds=1))
    per_hour = UNITS_PER_GPU * 3600 * 10**6
    return {
        "intervals": size,
        "nodes": Node.objects.count(),
        "organizations": organizations,
        "allocate_s": allocate_s,
        "inputs_key_s": inputs_key_s,
        "gpu_hours": {
            name: float(Decimal(units) / per_hour) for name, units in allocation.totals.items()
        },
        "hours_equal": allocation.total == pool_units,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000", help="placements, comma-separated")
    database_arguments(parser)
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the seeded database for the next run with --keep, which only allocates"
        " (neither records in RESULTS.md)",
    )
    args = parser.parse_args()
    on_test_databases(
        "books",
        (partial(run, int(size), args.organizations, args.seed) for size in args.sizes.split(",")),
        record=not args.no_results,
        keep=args.keep,
    )


if __name__ == "__main__":
    main()
