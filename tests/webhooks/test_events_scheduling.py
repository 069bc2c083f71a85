"""Scheduling's events become deliveries to the endpoints of the workload's (or the
request's) organization that chose their type: a workload's every state, reservations' and
quota requests' decisions, each with the object as the API shows it."""

import pytest

from scheduling import services as scheduling
from scheduling.models import QuotaRequest
from tenants.permissions import Caller
from webhooks.models import EventType

from ..factories import UserFactory
from .conftest import data_of

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("allow_private")]
HOOK = "https://1.1.1.1/hook"


def states(deliveries) -> list[str]:
    return [data_of(delivery)["state"] for delivery in deliveries]


def test_a_submitted_workload_is_delivered_pending(register, submit, deliveries_of):
    register(HOOK)
    [delivery] = deliveries_of(lambda: submit(name="train"))
    assert (delivery.event_type, data_of(delivery)["name"], states([delivery])) == (
        "workload.state_changed",
        "train",
        ["Pending"],
    )


def test_a_workload_admitted_then_running_is_delivered_each_time(
    register, submit, cycle, advance, deliveries_of
):
    register(HOOK)
    submit(name="train")
    admitted = deliveries_of(cycle)
    running = deliveries_of(lambda: advance(10))
    assert (states(admitted), states(running[len(admitted) :])) == (["Admitted"], ["Running"])


def test_a_cancelled_workload_is_delivered_cancelled(register, submit, mia, deliveries_of):
    register(HOOK)
    workload = submit(name="train")
    made = deliveries_of(
        lambda: scheduling.workload_cancel(caller=Caller(user=mia), workload=workload)
    )
    assert states(made)[-1] == "Cancelled"


def test_an_endpoint_that_chose_other_types_gets_nothing(register, submit, deliveries_of):
    register(HOOK, event_types=[EventType.INVOICE_ISSUED])
    assert deliveries_of(lambda: submit(name="train")) == []


def test_a_paused_endpoint_gets_nothing(register, submit, deliveries_of):
    register(HOOK, is_active=False)
    assert deliveries_of(lambda: submit(name="train")) == []


def test_another_organizations_endpoint_gets_nothing(globex, bruno, submit, deliveries_of):
    from webhooks import services

    services.endpoint_create(
        caller=Caller(user=bruno),
        organization=globex,
        url=HOOK,
        event_types=[EventType.WORKLOAD_STATE_CHANGED],
    )
    assert deliveries_of(lambda: submit(name="train")) == []


def test_a_quota_request_denied_is_delivered_and_one_made_is_not(
    register, alice, acme, cluster, deliveries_of
):
    register(HOOK, event_types=[EventType.QUOTA_REQUEST_DECIDED])
    ask = scheduling.QuotaAsk(gpu_class="H100-80GB", amount=8, reason="Sprint")
    made = deliveries_of(
        lambda: scheduling.quota_request_create(
            caller=Caller(user=alice), organization=acme, ask=ask
        )
    )
    operator = Caller(user=UserFactory(email="ops@example.com", is_staff=True))
    request = QuotaRequest.objects.get()
    [denied] = deliveries_of(
        lambda: scheduling.quota_request_reject(
            caller=operator, quota_request=request, reason="Not now."
        )
    )
    assert (made, denied.event_type, data_of(denied)["state"]) == (
        [],
        "quota_request.decided",
        "denied",
    )


@pytest.fixture
def webhooks_queued():
    """How many makings of deliveries wait in the broker (none before the test, none after)."""
    from portal.celery import app, queue_depth
    from webhooks.tasks import webhook_deliveries_make

    queue = app.amqp.router.route({}, webhook_deliveries_make.name)["queue"].name

    def purge():
        with app.connection_for_write() as connection:
            connection.default_channel.queue_purge(queue)

    purge()
    yield lambda: queue_depth(webhook_deliveries_make.name)
    purge()


def test_with_no_active_endpoint_an_event_queues_no_task(
    register, submit, django_capture_on_commit_callbacks, webhooks_queued
):
    from webhooks.models import Endpoint

    made, _ = register(HOOK)
    Endpoint.objects.filter(pk=made.pk).update(is_active=False)
    with django_capture_on_commit_callbacks(execute=True):
        submit()
    assert webhooks_queued() == 0


def test_with_an_active_endpoint_an_event_queues_its_task(
    register, submit, django_capture_on_commit_callbacks, webhooks_queued
):
    register(HOOK)
    with django_capture_on_commit_callbacks(execute=True):
        submit()
    assert webhooks_queued() == 1
