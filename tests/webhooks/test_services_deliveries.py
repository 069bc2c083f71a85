"""Deliveries to a real local receiver: signed, retried with backoff after a failure under the
same id, given up after the schedule, never sent where the URL now resolves to a refused
address, and sent again on demand."""

import hashlib
import hmac
import threading
from datetime import timedelta

import pytest
from werkzeug import Response

from portal import clock
from portal.errors import Conflict
from tenants.permissions import Caller
from webhooks import services
from webhooks.models import Delivery

from .conftest import received

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("allow_private")]


def test_a_delivery_is_signed_with_the_endpoint_secret_over_timestamp_and_body(
    httpserver, register, delivered_workload
):
    httpserver.expect_request("/hook").respond_with_data("ok")
    _, secret = register(httpserver.url_for("/hook"))
    [delivery] = delivered_workload()
    services.delivery_attempt(delivery_id=delivery.pk)
    [(headers, _, raw)] = received(httpserver)
    signed = f"{headers['Portal-Webhook-Timestamp']}.".encode() + raw
    expected = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    assert headers["Portal-Webhook-Signature"] == f"v1={expected}"


def test_a_delivery_carries_its_id_type_organization_and_the_object_as_the_api_shows_it(
    httpserver, register, delivered_workload
):
    httpserver.expect_request("/hook").respond_with_data("ok")
    register(httpserver.url_for("/hook"))
    [delivery] = delivered_workload()
    services.delivery_attempt(delivery_id=delivery.pk)
    [(headers, body, _)] = received(httpserver)
    assert (headers["Portal-Webhook-Id"], headers["Portal-Webhook-Event"]) == (
        str(delivery.pk),
        "workload.state_changed",
    )
    assert (body["id"], body["type"], body["organization"]) == (
        str(delivery.pk),
        "workload.state_changed",
        "acme",
    )
    assert (body["data"]["name"], body["data"]["state"], body["data"]["project"]) == (
        "train",
        "Pending",
        "ai-dev",
    )


def test_a_delivered_attempt_is_recorded_with_the_answer(httpserver, register, delivered_workload):
    httpserver.expect_request("/hook").respond_with_data("thanks", status=202)
    register(httpserver.url_for("/hook"))
    [delivery] = delivered_workload()
    services.delivery_attempt(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempts, delivery.last_status_code) == ("delivered", 1, 202)
    assert delivery.last_response_body == "thanks"


def test_a_500_is_retried_later_and_then_delivered_under_the_same_id(
    httpserver, register, delivered_workload
):
    httpserver.expect_ordered_request("/hook").respond_with_data("down", status=500)
    httpserver.expect_ordered_request("/hook").respond_with_data("ok")
    register(httpserver.url_for("/hook"))
    [delivery] = delivered_workload()
    services.delivery_attempt(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert (delivery.state, delivery.last_status_code) == ("pending", 500)
    assert services.deliveries_due(now=delivery.next_attempt_at) == [str(delivery.pk)]
    services.delivery_attempt(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    first, second = received(httpserver)
    assert (delivery.state, delivery.attempts) == ("delivered", 2)
    assert first[0]["Portal-Webhook-Id"] == second[0]["Portal-Webhook-Id"] == str(delivery.pk)
    assert first[2] == second[2]


def test_retries_back_off_exponentially(httpserver, register, delivered_workload):
    httpserver.expect_request("/hook").respond_with_data("down", status=503)
    register(httpserver.url_for("/hook"))
    [delivery] = delivered_workload()
    waits = []
    for _ in range(3):
        services.delivery_attempt(delivery_id=delivery.pk)
        delivery.refresh_from_db()
        waits.append(delivery.next_attempt_at - delivery.last_attempt_at)
    assert waits == [timedelta(minutes=1), timedelta(minutes=4), timedelta(minutes=16)]


def test_a_delivery_fails_for_good_once_its_schedule_is_spent(
    httpserver, register, delivered_workload
):
    httpserver.expect_request("/hook").respond_with_data("down", status=500)
    register(httpserver.url_for("/hook"))
    [delivery] = delivered_workload()
    for _ in range(len(services.RETRY_DELAYS) + 1):
        services.delivery_attempt(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempts, delivery.next_attempt_at) == ("failed", 7, None)
    assert services.delivery_attempt(delivery_id=delivery.pk) is None


def test_the_retry_schedule_lasts_most_of_a_day():
    assert sum(services.RETRY_DELAYS, timedelta()) == timedelta(hours=22, minutes=45)


def test_a_slow_receiver_times_out_and_is_retried(
    httpserver, register, delivered_workload, quick_timeout
):
    answer = threading.Event()

    def slow(request):
        answer.wait(timeout=10)
        return Response("late")

    httpserver.expect_request("/hook").respond_with_handler(slow)
    register(httpserver.url_for("/hook"))
    [delivery] = delivered_workload()
    started = clock.monotonic()
    services.delivery_attempt(delivery_id=delivery.pk)
    waited = clock.monotonic() - started
    answer.set()  # the receiver answers at last, to nobody; logged before the next test
    while not httpserver.log and clock.monotonic() - started < 10:
        threading.Event().wait(0.05)
    delivery.refresh_from_db()
    assert (delivery.state, delivery.last_status_code) == ("pending", None)
    assert delivery.last_error.startswith("timed out")
    assert waited < 1.5


def test_a_dead_receiver_is_retried(register, delivered_workload, unused_port):
    register(f"http://127.0.0.1:{unused_port}/hook")
    [delivery] = delivered_workload()
    services.delivery_attempt(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempts, bool(delivery.last_error)) == ("pending", 1, True)


def test_a_url_that_now_resolves_to_a_refused_address_is_not_sent_to(
    httpserver, register, delivered_workload, settings
):
    httpserver.expect_request("/hook").respond_with_data("ok")
    register(httpserver.url_for("/hook"))
    [delivery] = delivered_workload()
    settings.PORTAL_WEBHOOKS_ALLOW_PRIVATE = False
    services.delivery_attempt(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert (received(httpserver), delivery.state) == ([], "pending")
    assert delivery.last_error.startswith("refused: localhost resolves to 127.0.0.1")


def test_a_paused_endpoint_is_sent_nothing(httpserver, register, delivered_workload, alice):
    httpserver.expect_request("/hook").respond_with_data("ok")
    endpoint, _ = register(httpserver.url_for("/hook"))
    [delivery] = delivered_workload()
    services.endpoint_update(caller=Caller(user=alice), endpoint=endpoint, is_active=False)
    assert services.delivery_attempt(delivery_id=delivery.pk) is None
    assert received(httpserver) == []


def test_a_redelivery_sends_the_same_delivery_again_as_one_attempt_more(
    httpserver, register, delivered_workload, alice
):
    httpserver.expect_request("/hook").respond_with_data("ok")
    register(httpserver.url_for("/hook"))
    [delivery] = delivered_workload()
    services.delivery_attempt(delivery_id=delivery.pk)
    services.delivery_redeliver(caller=Caller(user=alice), delivery=delivery)
    services.delivery_attempt(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    first, again = received(httpserver)
    assert (delivery.state, delivery.attempts) == ("delivered", 2)
    assert (first[2], first[0]["Portal-Webhook-Id"]) == (again[2], again[0]["Portal-Webhook-Id"])
    assert list(delivery.attempt_set.values_list("number", "manual")) == [(1, False), (2, True)]


def test_a_failed_redelivery_is_not_retried(httpserver, register, delivered_workload, alice):
    httpserver.expect_request("/hook").respond_with_data("ok")
    register(httpserver.url_for("/hook"))
    [delivery] = delivered_workload()
    services.delivery_attempt(delivery_id=delivery.pk)
    httpserver.clear_all_handlers()
    httpserver.expect_request("/hook").respond_with_data("gone", status=410)
    services.delivery_redeliver(caller=Caller(user=alice), delivery=delivery)
    services.delivery_attempt(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert (delivery.state, delivery.next_attempt_at, delivery.last_status_code) == (
        "failed",
        None,
        410,
    )


def test_a_delivery_still_waiting_is_not_redelivered(
    httpserver, register, delivered_workload, alice
):
    register(httpserver.url_for("/hook"))
    [delivery] = delivered_workload()
    with pytest.raises(Conflict) as refused:
        services.delivery_redeliver(caller=Caller(user=alice), delivery=delivery)
    assert refused.value.code == "delivery_waiting"


def test_making_the_deliveries_of_one_publication_twice_makes_them_once(
    httpserver, register, submit
):
    register(httpserver.url_for("/hook"))
    workload = submit()
    payload = {"workload_ids": [str(workload.pk)]}
    first = services.deliveries_make(
        event="workloads_submitted", event_id="0" * 32, payload=payload
    )
    again = services.deliveries_make(
        event="workloads_submitted", event_id="0" * 32, payload=payload
    )
    assert (len(first), again, Delivery.objects.count()) == (1, first, 1)
