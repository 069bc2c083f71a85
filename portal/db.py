"""Database helpers every app may use."""

import hashlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from django.core.exceptions import ValidationError
from django.db import DatabaseError, connection, models

from .errors import NotFound


def rows_update(rows: Sequence[models.Model], fields: Sequence[str]) -> None:
    """Write `fields` of many rows of one model.

    On PostgreSQL one UPDATE ... FROM unnest(one array per column): a handful of parameters
    however many rows. Elsewhere one UPDATE a row, sent together. Django's bulk_update builds
    a CASE expression per field and row in Python, which costs seconds for the ten thousand
    pending workloads of a cycle.
    """
    if not rows:
        return
    meta = rows[0]._meta
    columns = [meta.get_field(name) for name in fields]
    values = [
        [column.get_db_prep_save(getattr(row, column.attname), connection) for row in rows]
        for column in columns
    ]
    keys = [meta.pk.get_db_prep_value(row.pk, connection) for row in rows]
    _columns_write(meta, columns, keys, values)


def values_update(
    model: type[models.Model], fields: Sequence[str], rows: Sequence[Sequence]
) -> None:
    """`rows_update` for rows as tuples of values (the key first, then `fields`' values in
    their order), with no model instance made (see `_prepared` for the values)."""
    if not rows:
        return
    meta = model._meta
    columns = [meta.get_field(name) for name in fields]
    keys, *values = _prepared([meta.pk, *columns], rows)
    _columns_write(meta, columns, keys, values)


def values_insert(
    model: type[models.Model], fields: Sequence[str], rows: Sequence[Sequence]
) -> None:
    """Insert rows given as tuples of `fields`' values (a foreign key as its related row's
    key), with no model instance made (see `_prepared` for the values): on PostgreSQL one
    INSERT ... SELECT FROM unnest(one array per column), elsewhere `bulk_create`. Fields not
    named take their database default (an automatic key), not their model default."""
    if not rows:
        return
    meta = model._meta
    columns = [meta.get_field(name) for name in fields]
    if connection.vendor != "postgresql":
        attnames = [column.attname for column in columns]
        model.objects.bulk_create(model(**dict(zip(attnames, row, strict=True))) for row in rows)
        return
    values = _prepared(columns, rows)
    quote = connection.ops.quote_name
    arrays = ", ".join(f"%s::{column.db_type(connection)}[]" for column in columns)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {quote(meta.db_table)}"
            f" ({', '.join(quote(column.column) for column in columns)})"
            f" SELECT * FROM unnest({arrays})",
            values,
        )


def rows_insert(rows: Sequence[models.Model]) -> None:
    """Insert unsaved rows of one model (their automatic keys made by the database, not read
    back). On PostgreSQL one INSERT ... SELECT: each column whose value is the same in every
    row sent once, each that varies as one array, unnested; the thousands of rows of a job
    array, alike but for their key and name, cost a few arrays, not Django's compilation of
    every value of every row. Elsewhere `bulk_create`."""
    if not rows:
        return
    model = type(rows[0])
    columns = [
        field
        for field in model._meta.concrete_fields
        if not (field.primary_key and isinstance(field, models.AutoField))
    ]
    # An array column's values unnested would be flattened into one.
    if connection.vendor != "postgresql" or any(
        column.db_type(connection).endswith("]") for column in columns
    ):
        model.objects.bulk_create(rows)
        return
    quote = connection.ops.quote_name
    picks, constants, arrays, varying = [], [], [], []
    for column in columns:
        if getattr(column, "auto_now", False) or getattr(column, "auto_now_add", False):
            values = [column.pre_save(row, add=True) for row in rows]
        else:
            values = [getattr(row, column.attname) for row in rows]
        cast = column.db_type(connection)
        if all(value == values[0] for value in values):
            picks.append(f"%s::{cast}")
            constants.append(_prepared([column], [values[:1]])[0][0])
        else:
            picks.append(f"v.c{len(arrays)}")
            arrays.append(f"%s::{cast}[]")
            (prepared,) = _prepared([column], [[value] for value in values])
            varying.append(prepared)
    source = (
        f"unnest({', '.join(arrays)}) AS v({', '.join(f'c{n}' for n in range(len(arrays)))})"
        if arrays
        else f"generate_series(1, {len(rows)})"
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {quote(model._meta.db_table)}"
            f" ({', '.join(quote(column.column) for column in columns)})"
            f" SELECT {', '.join(picks)} FROM {source}",
            [*constants, *varying],
        )
    for row in rows:
        row._state.adding, row._state.db = False, connection.alias


def _prepared(columns: list, rows: Sequence[Sequence]) -> list[list]:
    """The values of `rows` (tuples, in the order of `columns`) as one list per column, as
    the database takes them. On PostgreSQL the values go as they are but JSON: the driver
    takes the Python values of the other fields (ints, floats, strings, aware datetimes,
    UUIDs, None) as Django would pass them, so the conversion of each value by its field,
    a third of the time of writing ten thousand rows, is skipped. Elsewhere each value is
    converted."""
    values = [list(column) for column in zip(*rows, strict=True)]
    postgresql = connection.vendor == "postgresql"
    for index, column in enumerate(columns):
        if not postgresql or isinstance(column, models.JSONField):
            values[index] = [column.get_db_prep_save(value, connection) for value in values[index]]
    return values


def _columns_write(meta, columns: list, keys: list, values: list[list]) -> None:
    """The UPDATE of `rows_update`: `values` one list per column, in the order of `keys`."""
    quote = connection.ops.quote_name
    table, key = quote(meta.db_table), quote(meta.pk.column)
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            assignments = ", ".join(f"{quote(column.column)} = %s" for column in columns)
            cursor.executemany(
                f"UPDATE {table} SET {assignments} WHERE {key} = %s",
                [[*row, pk] for *row, pk in zip(*values, keys, strict=True)],
            )
            return
        names = [f"c{index}" for index in range(len(columns))]
        arrays = ", ".join(f"%s::{column.db_type(connection)}[]" for column in [*columns, meta.pk])
        assignments = ", ".join(
            f"{quote(column.column)} = v.{name}"
            for column, name in zip(columns, names, strict=True)
        )
        cursor.execute(
            f"UPDATE {table} AS t SET {assignments} "
            f"FROM unnest({arrays}) AS v({', '.join(names)}, pk) WHERE t.{key} = v.pk",
            [*values, keys],
        )


def one_or_not_found(queryset, pk, name: str):
    """The object of ``queryset`` with id ``pk``; a malformed or unknown id (or one the caller
    may not see, which the queryset leaves out) is a NotFound."""
    try:
        found = queryset.filter(pk=pk).first()
    except (ValidationError, ValueError, TypeError):  # not a UUID / not a number ("abc")
        found = None
    if found is None:
        raise NotFound(f"No such {name}.")
    return found


def advisory_lock_key(name: str) -> int:
    """A stable signed 64-bit key for a PostgreSQL advisory lock named `name`."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), signed=True)


@contextmanager
def advisory_lock(name: str) -> Iterator[bool]:
    """Hold the PostgreSQL session advisory lock `name` while the block runs: True if taken,
    False at once (no wait) if another session holds it. Session-level, so it spans the
    block's own transactions. Without PostgreSQL (SQLite: the demo's single worker) True."""
    if connection.vendor != "postgresql":
        yield True
        return
    key = advisory_lock_key(name)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [key])
        taken = bool(cursor.fetchone()[0])
    try:
        yield taken
    finally:
        if taken:
            try:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s)", [key])
            except DatabaseError:
                # A broken connection (or an aborted transaction around the block): closing
                # the session is what releases its locks.
                connection.close()


class EpochMicroseconds(models.Func):
    """A timestamp column as integer microseconds since the epoch, computed by the database
    exactly (PostgreSQL's epoch is a numeric; on SQLite from the stored text, whose six
    digits its date functions round to three), so that reading a million rows builds no
    datetime."""

    output_field = models.BigIntegerField()
    arity = 1

    def as_postgresql(self, compiler, connection, **extra_context):
        return self.as_sql(
            compiler,
            connection,
            template="(EXTRACT(EPOCH FROM %(expressions)s) * 1000000)::bigint",
            **extra_context,
        )

    def as_sqlite(self, compiler, connection, **extra_context):
        # Django stores 'YYYY-MM-DD HH:MM:SS[.ffffff]' in UTC: the whole seconds (read
        # without the fraction, which SQLite rounds to milliseconds, .999999 to the next
        # second), then the digits after the point padded to six.
        column, params = compiler.compile(self.source_expressions[0])
        seconds = f"CAST(strftime('%%s', substr({column}, 1, 19)) AS INTEGER) * 1000000"
        fraction = f"CAST(substr(substr({column}, 21) || '000000', 1, 6) AS INTEGER)"
        return f"({seconds} + {fraction})", (*params, *params)
