"""Rating on PostgreSQL in one statement per range of intervals: the same rules as the Python
pass in ``rating`` (which SQLite runs), set-based so that a million intervals rate in
seconds and the process's memory does not grow with them. The rules are ``billing.pricing``'s
(which on-demand item applies, which price version is in force, what a record costs), written
again here in SQL: property tests on PostgreSQL hold the statement to the Python pass on
random usage, catalogs and price histories (``tests/billing/test_services_rating_sql.py``,
``tests/billing/test_pricing_properties.py``).

Per interval of the range with something left to rate, from where its records end (or its
start) to its end (or the last whole hour while it runs):
- the on-demand item (``pricing.on_demand_items``: one for its tier before one for every
  tier, by slug) offered to its organization when it began;
- its cuts: where the unrated part starts, every whole hour inside it, every price change of
  the item (the organization's own or the list's), the edges of its reservation's window;
- a record per piece between two cuts: inside the window ``reserved_use`` at no cost, else
  ``on_demand`` at the version in force at the piece's start (``pricing.version_in_force``:
  the organization's own over the list's; none: unpriced, at no cost);
- quantity: the amount times the seconds, exact to the microsecond; cost: the unit price
  times the GPU-hours (a share's milli-GPU as its fraction of a GPU), to 10 places, half up;
- ``rated_until`` moves to the end, in the same statement as the records.

Two passes never rate a range at once: each takes a lock on the range's start first (the
ranges of every pass start at the same multiples, ``metering.over_ranges``), so the second
waits for the first to commit, and its statement, which reads the intervals after that (read
committed), finds them rated and writes nothing. The insert therefore needs no ``ON CONFLICT
DO NOTHING``, whose check of the unique key before each row cost 5 to 20% of the
statement's database CPU (bench/RESULTS.md); the key (interval, piece start) still refuses
a record written twice, by failing the statement rather than skipping the row.
"""

from datetime import datetime

from django.db import connection
from django.db.models import CharField, DateTimeField, IntegerField, QuerySet, UUIDField
from django.db.models.expressions import RawSQL

from scheduling.models import Reservation

from ..models import BillingRecord, PriceVersion, UsageInterval
from ..pricing import on_demand_items, versions_in_force
from .metering import range_lock_key


def _column(name: str, field) -> RawSQL:
    """A column of the statement (``u``: the interval; ``k``, ``changes``: a price key and a
    moment its price changes), for the rules' queries to refer to."""
    return RawSQL(name, (), output_field=field)


# The rules of ``pricing``, as the statement asks them: the item that prices an interval, and
# the version in force at a change of an item's price for an organization.
ITEM_APPLYING = on_demand_items(
    organization=_column("u.organization_id", UUIDField()),
    gpu_class_id=_column("u.gpu_class_id", IntegerField()),
    mig_profile=_column("u.mig_profile", CharField()),
    tier_id=_column("u.tier_id", IntegerField()),
    at=_column("u.started_at", DateTimeField()),
).values("pk")[:1]
VERSION_IN_FORCE = versions_in_force(
    PriceVersion.objects.filter(item=_column("k.item_id", IntegerField())),
    organization=_column("k.organization_id", UUIDField()),
    at=_column("changes.at", DateTimeField()),
).values("id", "unit_price")[:1]


def _rule_sql(rule: QuerySet) -> str:
    """``rule`` in SQL, its values inlined (and ``%`` doubled: the statement has parameters
    of its own)."""
    sql, params = rule.query.sql_with_params()
    return connection.ops.compose_sql(sql, params).replace("%", "%%")


RATE_SQL = """
WITH todo AS MATERIALIZED (
    SELECT u.id, u.organization_id, u.project_id, u.gpu_class_id, u.mig_profile,
           u.resource, u.amount, u.tier_id,
           COALESCE(u.rated_until, u.started_at) AS from_at,
           COALESCE(u.ended_at, %(horizon)s) AS to_at,
           r.starts_at AS window_from,
           CASE WHEN r.state = %(cancelled)s AND r.cancelled_at IS NOT NULL
                THEN GREATEST(r.starts_at, LEAST(r.ends_at, r.cancelled_at))
                ELSE r.ends_at END AS window_to,
           ({item_applying}) AS item_id
      FROM {interval} u
      LEFT JOIN {reservation} r ON r.id = u.reservation_id
     WHERE u.id >= %(first)s AND u.id < %(last)s
       -- USAGE_UNRATED, which lets its partial index serve
       AND (u.ended_at IS NULL OR u.rated_until < u.ended_at
            OR (u.rated_until IS NULL AND u.ended_at > u.started_at))
       AND COALESCE(u.rated_until, u.started_at) < COALESCE(u.ended_at, %(horizon)s)
),
cuts AS (
    SELECT id, from_at AS at FROM todo
    UNION ALL
    SELECT id, generate_series(date_trunc('hour', from_at, 'UTC') + interval '1 hour',
                               to_at - interval '1 microsecond', interval '1 hour')
      FROM todo
    UNION ALL
    SELECT t.id, p.effective_from
      FROM todo t
      JOIN {price} p ON p.item_id = t.item_id
       AND (p.organization_id IS NULL OR p.organization_id = t.organization_id)
       AND p.effective_from > t.from_at AND p.effective_from < t.to_at
    UNION ALL
    SELECT t.id, edge.at
      FROM todo t CROSS JOIN LATERAL (VALUES (t.window_from), (t.window_to)) AS edge(at)
     WHERE edge.at > t.from_at AND edge.at < t.to_at
),
pieces AS (
    -- A cut made twice (a price change on the hour) gives an empty piece, dropped below.
    SELECT id, at AS starts_at, lead(at) OVER (PARTITION BY id ORDER BY at) AS next_at
      FROM cuts
),
price_keys AS (
    SELECT DISTINCT item_id, organization_id FROM todo WHERE item_id IS NOT NULL
),
price_segments AS (
    SELECT k.item_id, k.organization_id, changes.at AS segment_from,
           lead(changes.at) OVER (PARTITION BY k.item_id, k.organization_id
                                  ORDER BY changes.at) AS segment_to,
           version.id AS version_id, version.unit_price
      FROM price_keys k
      CROSS JOIN LATERAL (
          SELECT DISTINCT p.effective_from AS at FROM {price} p
           WHERE p.item_id = k.item_id
             AND (p.organization_id IS NULL OR p.organization_id = k.organization_id)
      ) AS changes
      CROSS JOIN LATERAL ({version_in_force}) AS version
),
rated AS (
    SELECT t.*, piece.starts_at, COALESCE(piece.next_at, t.to_at) AS ends_at,
           t.window_from IS NOT NULL AND t.window_from <= piece.starts_at
               AND piece.starts_at < t.window_to AS inside,
           t.amount * extract(epoch FROM COALESCE(piece.next_at, t.to_at) - piece.starts_at)
               AS quantity,
           segment.version_id, segment.unit_price
      FROM pieces piece
      JOIN todo t ON t.id = piece.id
      LEFT JOIN price_segments segment
        ON segment.item_id = t.item_id AND segment.organization_id = t.organization_id
       AND segment.segment_from <= piece.starts_at
       AND (segment.segment_to IS NULL OR piece.starts_at < segment.segment_to)
     WHERE piece.next_at IS NULL OR piece.next_at > piece.starts_at
),
written AS (
    INSERT INTO {record} (interval_id, organization_id, project_id, gpu_class_id,
                          mig_profile, resource, tier_id, charge, starts_at, ends_at,
                          quantity_seconds, item_id, price_version_id, unit_price, cost)
    SELECT id, organization_id, project_id, gpu_class_id, mig_profile, resource, tier_id,
           CASE WHEN inside THEN %(reserved_use)s ELSE %(on_demand)s END,
           starts_at, ends_at, quantity,
           CASE WHEN inside THEN NULL ELSE item_id END,
           CASE WHEN inside THEN NULL ELSE version_id END,
           CASE WHEN inside THEN 0 ELSE unit_price END,
           CASE WHEN inside OR unit_price IS NULL THEN 0
                ELSE round(unit_price * quantity
                           / CASE WHEN resource = %(shared)s THEN 3600000 ELSE 3600 END, 10)
           END
      FROM rated
    RETURNING 1
),
advanced AS (
    -- The range on both sides: else the join reads every interval of every month each range.
    UPDATE {interval} u SET rated_until = t.to_at FROM todo t
     WHERE u.id = t.id AND u.id >= %(first)s AND u.id < %(last)s
)
SELECT count(*) FROM written
"""


def intervals_rate(*, first: int, last: int, horizon: datetime) -> int:
    """Rate the unrated parts of the intervals with ids in [first, last) up to ``horizon``;
    the number of records written."""
    quote = connection.ops.quote_name
    connection.ensure_connection()
    sql = RATE_SQL.format(
        item_applying=_rule_sql(ITEM_APPLYING),
        version_in_force=_rule_sql(VERSION_IN_FORCE),
        interval=quote(UsageInterval._meta.db_table),
        reservation=quote(Reservation._meta.db_table),
        price=quote(PriceVersion._meta.db_table),
        record=quote(BillingRecord._meta.db_table),
    )
    with connection.cursor() as cursor:
        # The range's lock; sorts of its pieces fit in memory rather than spill to disk; no
        # JIT: the planner counts 1,000 rows per hour series (a piece or two in fact), which
        # puts the statement far over the JIT thresholds, and compiling it took a quarter of
        # its database CPU for nothing back (bench/RESULTS.md, issue 26).
        cursor.execute(
            "SELECT pg_advisory_xact_lock(%s), set_config('work_mem', '64MB', true),"
            " set_config('jit', 'off', true)",
            [range_lock_key("rating", first)],
        )
        cursor.execute(
            sql,
            {
                "first": first,
                "last": last,
                "horizon": horizon,
                "cancelled": Reservation.State.CANCELLED,
                "reserved_use": BillingRecord.Charge.RESERVED_USE,
                "on_demand": BillingRecord.Charge.ON_DEMAND,
                "shared": UsageInterval.Resource.SHARED,
            },
        )
        return cursor.fetchone()[0]
