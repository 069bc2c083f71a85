"""Two beats (or a pass that outlasts its interval) never do a periodic pass's work twice.

The locked passes are those whose work a concurrent twin would repeat (scheduling/tasks.py,
`one_at_a_time`); the others are safe twice by construction (unique keys and row locks: metering,
invoice drafts, budgets, the reconcilers, quota requests; the cycle has its own lock)."""

import threading
from datetime import timedelta

import pytest
from django.db import connection

from portal import clock
from portal.db import advisory_lock
from scheduling import services, tasks
from scheduling.models import Reservation
from scheduling.services import ReservationRequest
from tenants.permissions import Caller

pytestmark = pytest.mark.django_db(transaction=True)

LOCKED = (
    tasks.inventory_sync,
    tasks.workloads_sync,
    tasks.idle_and_runtime_check,
    tasks.reservations_advance,
)


@pytest.fixture(autouse=True)
def postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("advisory locks are PostgreSQL's; set DATABASE_URL (see README)")


@pytest.fixture
def due_reservation(cluster, alice, acme):
    """An approved reservation whose window has begun: the next pass opens it."""
    start = clock.now().replace(minute=0, second=0, microsecond=0) + timedelta(days=1)
    [reservation] = services.reservations_request(
        caller=Caller(user=alice),
        organization=acme,
        request=ReservationRequest(
            gpu_class="H100-80GB",
            gpus=8,
            starts_at=start,
            ends_at=start + timedelta(hours=4),
            pool="dgx-h100",
        ),
    )
    Reservation.objects.filter(pk=reservation.pk).update(
        state=Reservation.State.APPROVED, starts_at=clock.now() - timedelta(minutes=1)
    )
    return reservation


def test_two_concurrent_passes_open_a_due_reservation_and_announce_it_once(
    due_reservation, monkeypatch
):
    published = []
    monkeypatch.setattr(
        "scheduling.services.reservation_upkeep.publish",
        lambda event, **data: published.append((event, data)),
    )
    advance = services.reservations_advance
    inside, finish = threading.Event(), threading.Event()

    def slow_advance(**options):
        moved = advance(**options)
        inside.set()
        finish.wait(timeout=30)  # holds the lock while the second pass comes
        return moved

    monkeypatch.setattr(tasks.services, "reservations_advance", slow_advance)
    first: list = []

    def run_first():
        try:
            first.append(tasks.reservations_advance())
        finally:
            connection.close()

    thread = threading.Thread(target=run_first)
    thread.start()
    assert inside.wait(timeout=30)
    second = tasks.reservations_advance()
    finish.set()
    thread.join(timeout=30)
    due_reservation.refresh_from_db()
    assert second is None
    assert first[0]["active"] == 1
    assert due_reservation.state == Reservation.State.ACTIVE
    assert len(published) == 1


def test_a_pass_runs_again_once_the_previous_one_finished(due_reservation):
    assert tasks.reservations_advance()["active"] == 1
    assert tasks.reservations_advance()["active"] == 0


@pytest.mark.parametrize("task", LOCKED, ids=lambda task: task.name)
def test_a_locked_pass_does_nothing_while_another_runs(task, monkeypatch):
    name = task.name.rsplit(".", 1)[1]
    monkeypatch.setattr(tasks.services, name, lambda **_: pytest.fail("ran twice"))
    holder = threading.Event()
    release = threading.Event()

    def hold():
        try:
            with advisory_lock(f"task:scheduling.tasks.{name}") as taken:
                assert taken
                holder.set()
                release.wait(timeout=30)
        finally:
            connection.close()

    thread = threading.Thread(target=hold)
    thread.start()
    assert holder.wait(timeout=30)
    try:
        assert task() is None
    finally:
        release.set()
        thread.join(timeout=30)


def test_the_lock_is_released_when_the_pass_fails(monkeypatch):
    def fail(**_):
        raise RuntimeError("boom")

    monkeypatch.setattr(tasks.services, "reservations_advance", fail)
    with pytest.raises(RuntimeError):
        tasks.reservations_advance()
    with advisory_lock("task:scheduling.tasks.reservations_advance") as taken:
        assert taken
