"""Monthly partitions of the metering tables on PostgreSQL: usage intervals by the month (UTC)
they started, billing records by the month their piece starts (migration 0019 made both tables
range-partitioned, each with a DEFAULT partition for any moment no month covers, so that an
insert never fails for want of a partition).

The beat creates this month's partition and the next ones' ahead of time. A month whose rows
landed in the DEFAULT partition meanwhile (the beat was down, or usage came in for a month long
past) gets its partition as well, its rows moved into it. A month is then a table of its own: the
month's queries read only it, and an old month can be detached and archived whole
(docs/operators/scaling.md). Elsewhere (SQLite) the tables are plain and nothing here applies.
"""

from datetime import datetime

from django.db import connection, transaction

from portal import clock
from portal.db import advisory_lock_key

from ..models import BillingRecord, UsageInterval
from ..pricing import month_of

MONTHS_AHEAD = 3
# Each partitioned table and the column whose month picks a row's partition.
PARTITIONED = {
    UsageInterval._meta.db_table: "started_at",
    BillingRecord._meta.db_table: "starts_at",
}
# Held while partitions are made: concurrent runs wait, then find them made.
PARTITIONS_LOCK = advisory_lock_key("billing.metering_partitions")


def metering_partitions_ensure(
    *, months_ahead: int = MONTHS_AHEAD, now: datetime | None = None
) -> list[str]:
    """Make the partitions that do not exist yet of this month (UTC), of the ``months_ahead``
    after it, and of every month with rows in a DEFAULT partition (moving those rows in):
    the names of those made, none when all exist or on a database without partitions."""
    if connection.vendor != "postgresql":
        return []
    coming = [month_of(now or clock.now())]
    while len(coming) <= months_ahead:
        coming.append(month_of(coming[-1][1]))
    made = []
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [PARTITIONS_LOCK])
        for table, column in PARTITIONED.items():
            cursor.execute(
                f"SELECT DISTINCT date_trunc('month', {column}, 'UTC')"
                f" FROM {connection.ops.quote_name(default_partition(table))}"
            )
            strays = [month_of(moment) for (moment,) in cursor.fetchall()]
            made += month_partitions_create(cursor, table, column, sorted({*coming, *strays}))
    return made


def month_partitions_create(
    cursor, table: str, column: str, months: list[tuple[datetime, datetime]]
) -> list[str]:
    """Attach to ``table`` (range-partitioned on ``column``) a partition for each month of
    ``months`` (UTC, as [start, end)) it has none for, with the month's rows from its DEFAULT
    partition; the names of those made.

    Made apart and then attached, which locks the parent table against schema changes only
    (inserts and reads go on) and the DEFAULT partition for the time it takes to check that
    none of its rows belong to the month. Attaching gives the partition the table's indexes,
    keys and foreign keys."""
    quote = connection.ops.quote_name
    cursor.execute(
        "SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute"
        " WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped",
        [table],
    )
    columns = cursor.fetchone()[0]
    made = []
    for start, end in months:
        name = month_partition(table, start)
        cursor.execute("SELECT to_regclass(%s)", [name])
        if cursor.fetchone()[0] is not None:
            continue
        # Literals: the bounds of a partition are no statement parameters.
        since, until = f"'{start.isoformat()}'", f"'{end.isoformat()}'"
        cursor.execute(
            f"CREATE TABLE {quote(name)}"
            f" (LIKE {quote(table)} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)"
        )
        cursor.execute(
            f"WITH moved AS (DELETE FROM {quote(default_partition(table))}"
            f" WHERE {column} >= {since} AND {column} < {until} RETURNING {columns})"
            f" INSERT INTO {quote(name)} ({columns}) SELECT {columns} FROM moved"
        )
        cursor.execute(
            f"ALTER TABLE {quote(table)} ATTACH PARTITION {quote(name)}"
            f" FOR VALUES FROM ({since}) TO ({until})"
        )
        made.append(name)
    return made


def month_partition(table: str, start: datetime) -> str:
    return f"{table}_{start:%Y_%m}"


def default_partition(table: str) -> str:
    return f"{table}_default"
