"""A batch submission (a job array): every workload queued in one request, or none."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from scheduling.models import Workload
from scheduling.services import BATCH_MAX
from scheduling.tasks import scheduling_cycle_request

from .conftest import SUBMITTING
from .test_workloads import BODY

pytestmark = pytest.mark.django_db

URL = "/api/v1/organizations/acme/projects/ai-dev/workload-batches/"


def batch(*names: str, **fields) -> dict:
    return {"workloads": [{**BODY, "name": name, "gpus": 1, **fields} for name in names]}


@pytest.mark.parametrize(("caller", "status"), SUBMITTING)
def test_submitting_a_batch_is_for_owners_admins_and_members(ready, api_as, caller, status):
    client = api_as(None if caller == "anonymous" else ready[caller])
    assert client.post(URL, batch("a-1", "a-2"), format="json").status_code == status


def test_a_batch_answers_each_workload_pending_in_the_order_sent(ready, api_as):
    response = api_as(ready["member"]).post(URL, batch("c-1", "a-2", "b-3"), format="json")
    assert response.status_code == 201
    assert [(w["name"], w["state"]) for w in response.json()] == [
        ("c-1", "Pending"),
        ("a-2", "Pending"),
        ("b-3", "Pending"),
    ]


def test_one_refused_workload_refuses_the_batch_naming_its_index_and_field(ready, api_as):
    body = batch("ok-1", "bad-2", "ok-3")
    body["workloads"][1]["gpu_classes"] = ["B300"]
    response = api_as(ready["member"]).post(URL, body, format="json")
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["workloads.1.gpu_classes"]
    assert not Workload.objects.exists()


def test_a_malformed_workload_is_named_by_its_index_and_field(ready, api_as):
    body = batch("ok-1", "ok-2")
    body["workloads"][1]["gpus"] = "eight"
    response = api_as(ready["member"]).post(URL, body, format="json")
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["workloads.1.gpus"]


def test_a_name_asked_for_twice_in_a_batch_is_refused_at_its_second_place(ready, api_as):
    response = api_as(ready["member"]).post(URL, batch("twin", "other", "twin"), format="json")
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["workloads.2.name"]
    assert not Workload.objects.exists()


def test_a_name_the_project_already_has_is_refused_at_its_index(ready, api_as, submit):
    submit(name="taken")
    response = api_as(ready["member"]).post(URL, batch("new", "taken"), format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {
        "workloads.1.name": ["ai-dev already has a workload named 'taken'."]
    }
    assert list(Workload.objects.values_list("name", flat=True)) == ["taken"]


@pytest.mark.parametrize("size", [0, BATCH_MAX + 1])
def test_a_batch_holds_one_to_ten_thousand_workloads(ready, api_as, size):
    body = batch(*(f"w-{n}" for n in range(size)))
    response = api_as(ready["member"]).post(URL, body, format="json")
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["workloads"]


def test_a_batch_requests_one_scheduling_cycle(ready, api_as, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        api_as(ready["member"]).post(URL, batch(*(f"w-{n}" for n in range(10))), format="json")
    cycles = [c.func for c in callbacks if c.func == scheduling_cycle_request]
    assert cycles == [scheduling_cycle_request]


def _statements(client, names) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.post(URL, batch(*names), format="json").status_code == 201
    return len(queries)


def test_a_batch_takes_the_same_statements_for_many_workloads_as_for_few(ready, api_as):
    client = api_as(ready["member"])
    client.post(URL, batch("warm"), format="json")
    few = _statements(client, [f"few-{n}" for n in range(2)])
    assert _statements(client, [f"many-{n}" for n in range(12)]) == few


def test_a_batch_of_more_than_a_hundred_is_queued_whole(ready, api_as):
    response = api_as(ready["member"]).post(
        URL, batch(*(f"w-{n}" for n in range(150))), format="json"
    )
    assert response.status_code == 201
    assert Workload.objects.count() == 150


def test_a_refusal_of_workloads_alike_is_named_at_each_of_their_indexes(ready, api_as):
    body = batch("big-1", "small", "big-2")
    for index in (0, 2):
        body["workloads"][index]["gpus"] = 9  # more than any node has
    response = api_as(ready["member"]).post(URL, body, format="json")
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["workloads.0.gpus", "workloads.2.gpus"]
    assert not Workload.objects.exists()


def test_a_bad_name_among_workloads_alike_is_named_at_its_index_only(ready, api_as):
    response = api_as(ready["member"]).post(URL, batch("ok-1", "Not_A_Slug", "ok-3"), format="json")
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["workloads.1.name"]
    assert not Workload.objects.exists()


def test_a_body_over_16_mib_is_a_413_and_nothing_is_written(ready, api_as):
    body = batch("w-1")
    body["workloads"][0]["command"] = ["x" * 4096] * (16 * 1024 // 4 + 1)
    response = api_as(ready["member"]).post(URL, body, format="json")
    assert (response.status_code, response.json()["error"]["code"]) == (413, "request_too_large")
    assert not Workload.objects.exists()


def test_a_body_over_1_mib_within_16_is_read(ready, api_as):
    body = batch(*(f"w-{n}" for n in range(4)))
    for item in body["workloads"]:  # about 320 KiB each
        item["command"] = ["x" * 4096] * 64
        item["env"] = {f"V{n}": "y" * 4000 for n in range(16)}
    response = api_as(ready["member"]).post(URL, body, format="json")
    assert response.status_code == 201
