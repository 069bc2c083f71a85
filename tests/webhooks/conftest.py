"""Webhooks against a real local receiver (pytest-httpserver on 127.0.0.1): the tests that
send to it allow private addresses explicitly (`allow_private`); without it they are refused,
as in production. The demo's simulated cluster and acme's quotas come from scheduling's
fixtures, for events of real workloads."""

import json
import uuid

import pytest

from portal.events import Event
from tenants.permissions import Caller
from webhooks import services
from webhooks.models import Delivery, EventType

from ..scheduling import conftest as scheduling_fixtures

# The demo's simulated cluster, acme's quotas, submissions and cycles, as scheduling's tests
# have them.
advance, backend, cluster = (
    scheduling_fixtures.advance,
    scheduling_fixtures.backend,
    scheduling_fixtures.cluster,
)
cycle, quotas, submit = (
    scheduling_fixtures.cycle,
    scheduling_fixtures.quotas,
    scheduling_fixtures.submit,
)


@pytest.fixture
def allow_private(settings):
    settings.PORTAL_WEBHOOKS_ALLOW_PRIVATE = True


@pytest.fixture
def quick_timeout(settings):
    settings.PORTAL_WEBHOOKS_TIMEOUT_SECONDS = 0.5


@pytest.fixture
def register(alice, acme):
    """Register an endpoint of acme as alice: (endpoint, secret)."""

    def make(url: str, event_types=(EventType.WORKLOAD_STATE_CHANGED,), **fields):
        return services.endpoint_create(
            caller=Caller(user=alice),
            organization=acme,
            url=url,
            event_types=list(event_types),
            **fields,
        )

    return make


@pytest.fixture
def endpoint(register):
    """An endpoint of acme's, at a public address, for invoices issued."""
    made, _ = register("https://1.1.1.1/hook", event_types=[EventType.INVOICE_ISSUED])
    return made


@pytest.fixture
def delivered_workload(submit):
    """Make the deliveries of a submitted workload's event, as the worker does after commit:
    the deliveries made."""

    def make(name: str = "train") -> list[Delivery]:
        workload = submit(name=name)
        ids = services.deliveries_make(
            event=Event.WORKLOADS_SUBMITTED,
            event_id=str(uuid.uuid4()),
            payload={"workload_ids": [str(workload.pk)]},
        )
        return list(Delivery.objects.filter(pk__in=ids))

    return make


def received(httpserver) -> list[tuple[dict, dict, bytes]]:
    """What the receiver got: each request's headers, JSON body and raw body."""
    return [
        (dict(request.headers), json.loads(request.get_data()), request.get_data())
        for request, _ in httpserver.log
    ]


@pytest.fixture
def unused_port():
    """A loopback port nothing listens on."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def eager():
    """Celery runs a task where it is queued, and raises its errors."""
    from portal.celery import app

    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = False, False


@pytest.fixture
def deliveries_of(django_capture_on_commit_callbacks, eager):
    """Do `act()`, then what webhooks' subscribers queue after its commit (their tasks run in
    place): the deliveries made, newest last, by event type and object state."""

    def run(act) -> list[Delivery]:
        with django_capture_on_commit_callbacks() as callbacks:
            act()
        for callback in callbacks:
            if getattr(callback, "func", callback).__module__ == "webhooks.apps":
                callback()
        return list(Delivery.objects.order_by("created_at", "event_id"))

    return run


def data_of(delivery: Delivery) -> dict:
    return json.loads(delivery.body)["data"]


def failed_delivery(endpoint, **fields) -> Delivery:
    """A delivery of an invoice issued that failed after its seven attempts."""
    return Delivery.objects.create(
        endpoint=endpoint,
        event_type=EventType.INVOICE_ISSUED,
        event_id=uuid.uuid4(),
        object_id="1",
        body="{}",
        state=Delivery.State.FAILED,
        **fields,
    )
