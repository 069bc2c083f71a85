"""The scheduler's state row: cycle requests folded into one queued cycle, and when a cycle
last wrote the waiting workloads' places."""

from datetime import UTC, datetime, timedelta

from django.db import connection

from portal import clock

from ..models import SchedulerState

CYCLE_REQUEST_LOST_AFTER = timedelta(minutes=2)


def scheduling_cycle_request() -> bool:
    """Ask for a scheduling cycle: True when the caller must queue one, False when one already
    waits in the queue and will serve this request too (requests fold into it). A request that
    waited longer than CYCLE_REQUEST_LOST_AFTER lost its task and counts as none."""
    now = clock.wall()
    # One statement on every submission's path: it sets the request time unless one waits,
    # and says whether it did (no row yet: the first request ever creates it).
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {SchedulerState._meta.db_table} SET cycle_requested_at = CASE"
            " WHEN cycle_requested_at IS NULL OR cycle_requested_at < %s THEN %s"
            " ELSE cycle_requested_at END WHERE id = 1 RETURNING cycle_requested_at = %s",
            [now - CYCLE_REQUEST_LOST_AFTER, now, now],
        )
        row = cursor.fetchone()
    if row is not None:
        return bool(row[0])
    _, created = SchedulerState.objects.get_or_create(pk=1, defaults={"cycle_requested_at": now})
    return created


def requests_served() -> datetime | None:
    """Mark every cycle request made so far as served by this run (one made from now on
    queues the next run), in the statement that reads when places were last written."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {SchedulerState._meta.db_table} SET cycle_requested_at = NULL"
            " WHERE id = 1 RETURNING places_written_at"
        )
        row = cursor.fetchone()
    written_at = row[0] if row else None
    if isinstance(written_at, str):
        written_at = datetime.fromisoformat(written_at)
    if written_at is not None and written_at.tzinfo is None:  # SQLite stores UTC, no zone
        written_at = written_at.replace(tzinfo=UTC)
    return written_at
