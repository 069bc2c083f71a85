"""The tasks delegate: beat's sweep queues the retries due, each an attempt task, which sends
the delivery (Celery runs them in place here; tests/worker runs them in a real worker)."""

import pytest

from webhooks import services, tasks
from webhooks.models import Delivery

from .conftest import received

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("allow_private")]


def test_the_sweep_queues_a_retry_due_and_its_attempt_sends_it(
    httpserver, register, delivered_workload, eager, django_capture_on_commit_callbacks
):
    httpserver.expect_ordered_request("/hook").respond_with_data("down", status=500)
    httpserver.expect_ordered_request("/hook").respond_with_data("ok")
    register(httpserver.url_for("/hook"))
    [delivery] = delivered_workload()
    tasks.webhook_delivery_attempt.delay(delivery_id=str(delivery.pk))
    Delivery.objects.filter(pk=delivery.pk).update(next_attempt_at=delivery.created_at)
    with django_capture_on_commit_callbacks(execute=True):
        queued = tasks.webhook_deliveries_due.delay().get()
    delivery.refresh_from_db()
    assert (queued, delivery.state, len(received(httpserver))) == (1, "delivered", 2)


def test_the_sweep_leaves_a_delivery_not_yet_due(register, delivered_workload):
    register("http://127.0.0.1:9/hook")
    [delivery] = delivered_workload()
    assert services.deliveries_due(now=delivery.created_at) == []
