"""A burst of submissions queues one scheduling cycle: requests fold into the one waiting."""

from datetime import timedelta

import pytest
from django.utils import timezone

from portal.celery import app
from scheduling import services
from scheduling.models import SchedulerState
from scheduling.services.cycle_state import CYCLE_REQUEST_LOST_AFTER

pytestmark = pytest.mark.django_db


def test_the_first_request_asks_for_a_cycle():
    assert services.scheduling_cycle_request() is True


def test_requests_while_a_cycle_waits_fold_into_it():
    services.scheduling_cycle_request()
    assert [services.scheduling_cycle_request() for _ in range(100)] == [False] * 100


def test_a_request_after_the_cycle_started_asks_for_the_next(cluster):
    services.scheduling_cycle_request()
    services.scheduling_cycle_run()
    assert services.scheduling_cycle_request() is True


def test_a_request_whose_cycle_was_lost_asks_again():
    services.scheduling_cycle_request()
    lost = timezone.now() - CYCLE_REQUEST_LOST_AFTER - timedelta(seconds=1)
    SchedulerState.objects.filter(pk=1).update(cycle_requested_at=lost)
    assert services.scheduling_cycle_request() is True


def queued_messages(queue: str) -> int:
    with app.connection_for_write() as connection:
        return connection.default_channel.queue_declare(queue=queue, passive=True).message_count


@pytest.fixture
def cycle_queue():
    """The broker queue of this test process's cycles, empty before and after the test."""
    app.control.purge()
    yield app.amqp.router.route({}, "scheduling.tasks.scheduling_cycle")["queue"].name
    app.control.purge()


def test_a_burst_of_submissions_queues_one_cycle(
    submit, cycle_queue, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        for n in range(20):
            submit(name=f"burst-{n}", gpus=1)
    assert queued_messages(cycle_queue) == 1
