"""Reporting a checkpoint (POST .../workloads/{name}/checkpoint/) and declaring a checkpoint
interval at submission: who may, and what bad input gets."""

from datetime import timedelta

import pytest

from portal import clock
from scheduling.models import Workload

from .conftest import SUBMITTING
from .test_workloads import BODY

pytestmark = pytest.mark.django_db

URL = "/api/v1/organizations/acme/projects/ai-dev/workloads/"


@pytest.fixture
def admitted(ready, submit, cycle):
    workload = submit(name="train-1", user=ready["member"])
    cycle()
    return workload


@pytest.mark.parametrize(("caller", "status"), [(c, 200 if s == 201 else s) for c, s in SUBMITTING])
def test_reporting_a_checkpoint_is_for_members_and_above(ready, admitted, api_as, caller, status):
    client = api_as(None if caller == "anonymous" else ready[caller])
    assert client.post(f"{URL}train-1/checkpoint/", {}, format="json").status_code == status


def test_a_reported_checkpoint_is_kept_and_shown(ready, admitted, api_as):
    admitted.refresh_from_db()
    at = admitted.admitted_at.isoformat().replace("+00:00", "Z")
    body = api_as(ready["member"]).post(f"{URL}train-1/checkpoint/", {"at": at}, format="json")
    assert body.json()["last_checkpoint_at"] == at


def test_a_checkpoint_reported_goes_on_the_timeline(ready, admitted, api_as):
    api_as(ready["member"]).post(f"{URL}train-1/checkpoint/", {}, format="json")
    assert admitted.events.filter(kind="checkpoint").count() == 1


def test_a_checkpoint_in_the_future_is_a_field_error(ready, admitted, api_as):
    later = (clock.now() + timedelta(hours=1)).isoformat()
    response = api_as(ready["member"]).post(
        f"{URL}train-1/checkpoint/", {"at": later}, format="json"
    )
    assert (response.status_code, "at" in response.json()["error"]["fields"]) == (400, True)


def test_a_checkpoint_before_the_start_is_a_field_error(ready, admitted, api_as):
    earlier = (clock.now() - timedelta(days=1)).isoformat()
    response = api_as(ready["member"]).post(
        f"{URL}train-1/checkpoint/", {"at": earlier}, format="json"
    )
    assert (response.status_code, "at" in response.json()["error"]["fields"]) == (400, True)


def test_a_checkpoint_that_is_not_a_time_is_a_field_error(ready, admitted, api_as):
    response = api_as(ready["member"]).post(
        f"{URL}train-1/checkpoint/", {"at": "yesterday"}, format="json"
    )
    assert (response.status_code, "at" in response.json()["error"]["fields"]) == (400, True)


def test_a_pending_workload_cannot_report_a_checkpoint(ready, submit, api_as):
    submit(name="train-1", user=ready["member"])
    response = api_as(ready["member"]).post(f"{URL}train-1/checkpoint/", {}, format="json")
    assert response.status_code == 409


def test_a_submission_declares_its_checkpoint_interval(ready, api_as):
    body = {**BODY, "checkpoint_interval_seconds": 1800}
    answer = api_as(ready["member"]).post(URL, body, format="json").json()
    assert answer["checkpoint_interval_seconds"] == 1800
    assert Workload.objects.get(name="train-1").checkpoint_interval == timedelta(minutes=30)


def test_a_checkpoint_interval_under_a_minute_is_a_field_error(ready, api_as):
    body = {**BODY, "checkpoint_interval_seconds": 5}
    response = api_as(ready["member"]).post(URL, body, format="json")
    assert "checkpoint_interval_seconds" in response.json()["error"]["fields"]


def test_the_priority_tiers_show_their_preemption_contract(ready, api_as):
    tiers = api_as(ready["viewer"]).get("/api/v1/priority-tiers/").json()
    assert {t["notice_seconds"] for t in tiers} == {30}
