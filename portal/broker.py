"""The embedded Celery broker of the demo and the tests: a SQLite file, through kombu's
SQLAlchemy transport, which needs no server.

kombu's file-system transport, the demo's broker before, writes a message file in place: a
worker that lists the folder while a producer writes takes a half-written file, fails to read
its JSON and stops for good ("Unrecoverable error: JSONDecodeError", issue 21). Here a message
is a row, written and taken in transactions: a reader never sees half of one
(`bench/broker_stress.py` pushes bursts through both; figures in bench/RESULTS.md).

Three changes to kombu's transport, for one SQLite file that several processes share for days:
- a message taken is deleted, not kept as an invisible row (kombu's never deletes them: the
  table, and each poll's scan of it, would grow with every task ever sent; nothing reads an
  invisible row again, so nothing is lost that kombu would have kept);
- write-ahead logging and a 30 s busy timeout, so that producers and the worker wait for each
  other instead of failing with "database is locked";
- two processes declaring the same new queue at once get the row the first one wrote, rather
  than an IntegrityError.

Settings use it for a broker URL of the form ``sqlite:///path`` (`embedded_broker`).
"""

from __future__ import annotations

import time
from json import loads
from pathlib import Path
from queue import Empty

from kombu.transport import sqlalchemy
from sqlalchemy import create_engine, event, text
from sqlalchemy.exc import IntegrityError, OperationalError

# How long a process waits for another's write to finish before it gives up (milliseconds).
BUSY_TIMEOUT_MS = 30_000
# How often an idle worker looks for messages (seconds). kombu's default, 1 s, also paces a busy
# worker: it waits that long each time all its processes are busy.
POLLING_INTERVAL = 0.1
# Transport options that are kombu's, not the database engine's.
KOMBU_OPTIONS = {
    "queue_tablename",
    "message_tablename",
    "callback",
    "errback",
    "max_retries",
    "interval_start",
    "interval_step",
    "interval_max",
    "retry_errors",
    "polling_interval",
}


def transport_of(url: str) -> str:
    """The kombu transport of a broker URL: this module's for ``sqlite:///path``, else the
    one the scheme names (Celery applies broker_transport to every URL it connects to)."""
    if url.startswith("sqlite:"):
        return "portal.broker:Transport"
    return url.partition("://")[0].partition("+")[0]


def embedded_broker(url: str) -> tuple[str, dict]:
    """Celery's broker_transport and broker_transport_options for ``sqlite:///path``; makes
    the file's folder."""
    Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    return transport_of(url), {"polling_interval": POLLING_INTERVAL}


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")
    finally:
        cursor.close()


class Channel(sqlalchemy.Channel):
    def _engine_from_config(self):
        client = self.connection.client
        options = {k: v for k, v in client.transport_options.items() if k not in KOMBU_OPTIONS}
        engine = create_engine(client.hostname, **options)
        if engine.dialect.name == "sqlite":
            event.listen(engine, "connect", _sqlite_pragmas)
        return engine

    def _open(self):
        """The engine and session factory; the tables are made by whichever process comes
        first (another's CREATE between this one's look and its own fails: look again)."""
        for attempt in range(5):
            try:
                return super()._open()
            except OperationalError:
                if attempt == 4:
                    raise
                time.sleep(0.1)
        raise AssertionError("unreachable")

    def _get_or_create(self, queue):
        try:
            return super()._get_or_create(queue)
        except IntegrityError:  # another process declared it between our look and our write
            self.session.rollback()
            return self.session.query(self.queue_cls).filter(self.queue_cls.name == queue).one()

    def _get(self, queue):
        """The oldest message of `queue`, deleted in the same transaction that reads it."""
        queue_id = self._get_or_create(queue).id
        session = self.session
        if session.bind.dialect.name == "sqlite":
            # The write lock first: no other reader can take the same row meanwhile.
            session.execute(text("BEGIN IMMEDIATE TRANSACTION"))
        try:
            message = (
                session.query(self.message_cls)
                .with_for_update()
                .filter(self.message_cls.queue_id == queue_id)
                .filter(self.message_cls.visible.is_not(False))
                .order_by(self.message_cls.id)
                .limit(1)
                .first()
            )
            if message is None:
                raise Empty()
            payload = message.payload
            session.query(self.message_cls).filter(self.message_cls.id == message.id).delete(
                synchronize_session=False
            )
            return loads(payload)
        finally:
            session.commit()


class Transport(sqlalchemy.Transport):
    Channel = Channel
