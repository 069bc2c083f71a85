"""State that a module's tests share, built once instead of once per test.

The rows are written in a transaction that stays open while the module's tests run and is
rolled back after the last of them. Each test still runs in a transaction of its own inside it
(pytest-django's, a savepoint here) that is rolled back after the test: every test starts from
the same rows, whatever the one before it wrote.
"""

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import transaction


@contextmanager
def kept_for_the_module(django_db_blocker) -> Iterator[None]:
    """Use in a module-scoped fixture (with ``django_db_setup`` and ``django_db_blocker``):
    write the shared rows inside, then yield them; they are rolled back when it exits. Only for
    modules whose tests all run in a transaction (``django_db`` without ``transaction=True``)."""
    with django_db_blocker.unblock(), transaction.atomic():
        yield
        transaction.set_rollback(True)
