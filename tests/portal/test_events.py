"""Events run their subscribers after the publishing transaction commits, never after a
rollback; extension points run every registered check, and the first refusal stops."""

import pytest
from django.db import transaction

from portal import events
from portal.errors import Conflict
from portal.events import Event, ExtensionPoint

pytestmark = pytest.mark.django_db


@pytest.fixture
def received(monkeypatch) -> list[dict]:
    """What a sole subscriber of PROJECT_CREATED receives (the apps' own are set aside)."""
    calls: list[dict] = []
    monkeypatch.setitem(events._subscribers, Event.PROJECT_CREATED, [])
    events.subscribe(Event.PROJECT_CREATED, lambda **payload: calls.append(payload))
    return calls


def test_a_subscriber_runs_once_the_transaction_commits(
    received, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        events.publish(Event.PROJECT_CREATED, project_id="p-1")
        assert received == []
    assert received == [{"project_id": "p-1"}]


def test_a_rolled_back_write_runs_no_subscriber(received, django_capture_on_commit_callbacks):
    with (
        django_capture_on_commit_callbacks(execute=True) as callbacks,
        pytest.raises(RuntimeError),
        transaction.atomic(),
    ):
        events.publish(Event.PROJECT_CREATED, project_id="p-1")
        raise RuntimeError("the write failed")
    assert (callbacks, received) == ([], [])


def test_subscribing_the_same_handler_twice_keeps_one_subscription(monkeypatch):
    calls: list = []
    monkeypatch.setitem(events._subscribers, Event.PROJECT_DELETED, [])
    for _ in range(2):
        events.subscribe(Event.PROJECT_DELETED, calls.append)
    assert events._subscribers[Event.PROJECT_DELETED] == [calls.append]


def test_an_unknown_event_is_refused():
    with pytest.raises(ValueError):
        events.publish("project_renamed", project_id="p-1")


def test_every_registered_check_runs_with_the_context(monkeypatch):
    seen = []
    monkeypatch.setitem(events._checks, ExtensionPoint.WORKLOAD_SUBMISSION, [])
    events.check_register(ExtensionPoint.WORKLOAD_SUBMISSION, lambda **c: seen.append(("a", c)))
    events.check_register(ExtensionPoint.WORKLOAD_SUBMISSION, lambda **c: seen.append(("b", c)))
    events.checks_run(ExtensionPoint.WORKLOAD_SUBMISSION, workloads=["w"])
    assert seen == [("a", {"workloads": ["w"]}), ("b", {"workloads": ["w"]})]


def test_the_first_refusing_check_stops_the_others(monkeypatch):
    seen = []

    def refuse(**context):
        raise Conflict("Over budget.", code="budget_exceeded")

    monkeypatch.setitem(events._checks, ExtensionPoint.WORKLOAD_SUBMISSION, [])
    events.check_register(ExtensionPoint.WORKLOAD_SUBMISSION, refuse)
    events.check_register(ExtensionPoint.WORKLOAD_SUBMISSION, lambda **c: seen.append(c))
    with pytest.raises(Conflict):
        events.checks_run(ExtensionPoint.WORKLOAD_SUBMISSION, workloads=["w"])
    assert seen == []
