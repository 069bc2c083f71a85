"""A job array's members, alike but for their names, are validated and answered once as a
whole: each still gets exactly the errors and the answer it would get alone."""

import pytest

from scheduling.models import Workload

from .test_workload_batches import URL, batch
from .test_workloads import URL as SINGLE_URL

pytestmark = pytest.mark.django_db


def _errors(response) -> dict:
    assert response.status_code == 400
    return response.json()["error"]["fields"]


@pytest.mark.parametrize("name", ["Not_A_Slug", 5, "x", None])
def test_a_member_alike_but_for_its_name_gets_the_name_errors_it_would_get_alone(
    ready, api_as, name
):
    client = api_as(ready["member"])
    body = batch("ok-1", "ok-2")
    body["workloads"][1]["name"] = name
    alone = _errors(client.post(SINGLE_URL, {**body["workloads"][1]}, format="json"))
    assert _errors(client.post(URL, body, format="json")) == {
        f"workloads.1.{field}": messages for field, messages in alone.items()
    }


def test_a_member_alike_but_without_a_name_is_told_its_name_is_required(ready, api_as):
    body = batch("ok-1", "ok-2")
    del body["workloads"][1]["name"]
    response = api_as(ready["member"]).post(URL, body, format="json")
    assert _errors(response) == {"workloads.1.name": ["This field is required."]}


def test_an_unknown_field_in_a_later_member_is_named_at_its_index(ready, api_as):
    body = batch("ok-1", "ok-2")
    body["workloads"][1]["colour"] = "blue"
    response = api_as(ready["member"]).post(URL, body, format="json")
    assert list(_errors(response)) == ["workloads.1.colour"]
    assert not Workload.objects.exists()


def test_each_member_is_answered_with_its_own_id_and_name(ready, api_as):
    response = api_as(ready["member"]).post(URL, batch("a-1", "a-2", "a-3"), format="json")
    stored = {str(pk): name for pk, name in Workload.objects.values_list("pk", "name")}
    assert {answer["id"]: answer["name"] for answer in response.json()} == stored


def test_members_unlike_each_other_are_each_answered_with_their_own_request(ready, api_as):
    body = batch("one", "two", "one-again")
    body["workloads"][1]["gpus"] = 2
    response = api_as(ready["member"]).post(URL, body, format="json")
    assert [(a["name"], a["gpus"]) for a in response.json()] == [
        ("one", 1),
        ("two", 2),
        ("one-again", 1),
    ]


def test_a_members_answer_is_what_its_detail_answers(ready, api_as):
    client = api_as(ready["member"])
    answer = client.post(URL, batch("a-1", "a-2"), format="json").json()[1]
    detail = client.get(f"{SINGLE_URL}a-2/").json()
    assert answer == {field: detail[field] for field in answer}
