from datetime import timedelta

import pytest

from scheduling.models import Workload

from ...roles import READING
from .conftest import SUBMITTING

pytestmark = pytest.mark.django_db

URL = "/api/v1/organizations/acme/projects/ai-dev/workloads/"
BODY = {
    "name": "train-1",
    "kind": "training",
    "tier": "training",
    "image": "nvcr.io/nvidia/pytorch:25.01-py3",
    "gpu_classes": ["H100-80GB"],
    "gpus": 8,
    "replicas": 2,
    "max_runtime_seconds": 3600,
}


@pytest.mark.parametrize(("caller", "status"), SUBMITTING)
def test_submitting_is_for_owners_admins_and_members(ready, api_as, caller, status):
    client = api_as(None if caller == "anonymous" else ready[caller])
    assert client.post(URL, BODY, format="json").status_code == status


@pytest.mark.parametrize(("caller", "status"), READING)
def test_every_member_reads_the_workloads_and_nobody_else(ready, submit, api_as, caller, status):
    submit(name="train-1")
    client = api_as(None if caller == "anonymous" else ready[caller])
    assert client.get(f"{URL}train-1/").status_code == status


@pytest.mark.parametrize(
    ("caller", "status"),
    [("owner", 200), ("admin", 200), ("member", 403), ("viewer", 403), ("foreign", 404)],
)
def test_cancelling_anothers_workload_is_for_owners_and_admins(
    ready, submit, api_as, caller, status
):
    submit(name="train-1", user=ready["owner"])
    response = api_as(ready[caller]).post(f"{URL}train-1/cancel/")
    assert response.status_code == status


def test_the_submitter_cancels_their_own_workload(ready, submit, api_as):
    submit(name="train-1", user=ready["member"])
    response = api_as(ready["member"]).post(f"{URL}train-1/cancel/")
    assert (response.status_code, response.json()["state"]) == (200, "Cancelled")


def test_a_submission_answers_the_pending_workload(ready, api_as):
    body = api_as(ready["member"]).post(URL, BODY, format="json").json()
    assert (body["state"], body["gpus"], body["replicas"]) == ("Pending", 8, 2)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"gpus": 0}, "gpus"),
        ({"gpus": "eight"}, "gpus"),
        ({"gpus": -1}, "gpus"),
        ({"kind": "mining"}, "kind"),
        ({"name": "Train_1"}, "name"),
        ({"name": "x" * 41}, "name"),
        ({"gpu_classes": ["TPU"]}, "gpu_classes"),
        ({"gpu_classes": "H100-80GB"}, "gpu_classes"),
        ({"replicas": 0}, "replicas"),
        ({"replicas": 9}, "gpus"),
        ({"gpu_milli": 1000}, "gpu_milli"),
        ({"mig_profile": "1g"}, "mig_profile"),
        ({"env": {"1BAD": "x"}}, "env"),
        ({"env": ["A=1"]}, "env"),
        ({"max_runtime_seconds": 5}, "max_runtime_seconds"),
        ({"tier": "gold"}, "tier"),
        ({"priority": 9}, "priority"),
        ({"image": "i" * 501}, "image"),
    ],
)
def test_invalid_input_is_a_400_naming_the_field_and_submits_nothing(ready, api_as, change, field):
    response = api_as(ready["member"]).post(URL, {**BODY, **change}, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"]
    assert not Workload.objects.exists()


def test_memory_above_every_node_is_a_400_naming_memory_mib(ready, api_as):
    body = {**BODY, "memory_mib": 8 * 1024 * 1024}  # 8 TiB; the largest node has 2 TiB
    response = api_as(ready["member"]).post(URL, body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {
        "memory_mib": ["8388608 MiB of memory per replica, but the largest node has 2097152 MiB."]
    }
    assert not Workload.objects.exists()


def test_an_environment_over_64_kib_is_a_400_naming_env(ready, api_as):
    env = {f"VAR_{n}": "x" * 4000 for n in range(17)}  # 68,000 bytes in 17 variables
    response = api_as(ready["member"]).post(URL, {**BODY, "env": env}, format="json")
    assert response.status_code == 400
    assert "at most 65536" in response.json()["error"]["fields"]["env"][0]


def test_more_than_128_environment_variables_is_a_400_naming_env(ready, api_as):
    env = {f"V{n}": "" for n in range(129)}
    response = api_as(ready["member"]).post(URL, {**BODY, "env": env}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"]["env"] == ["129 variables; at most 128."]


def test_an_environment_name_with_a_newline_is_a_400_naming_env(ready, api_as):
    response = api_as(ready["member"]).post(URL, {**BODY, "env": {"A\n": "1"}}, format="json")
    assert response.status_code == 400
    assert "env" in response.json()["error"]["fields"]
    assert not Workload.objects.exists()


@pytest.mark.parametrize(
    "image",
    [
        "pytorch:25.01\n",
        "nvcr.io/nvidia/pytorch:25.01-py3\nEVIL=1",
        "PyTorch",
        "nvcr.io/nvidia/pytorch:",
        "nvcr.io//pytorch",
        "pytorch@sha256:abc",
        "pytorch:" + "t" * 129,
        "a" * 256,
    ],
)
def test_an_image_that_is_not_an_oci_reference_is_a_400_naming_image(ready, api_as, image):
    response = api_as(ready["member"]).post(URL, {**BODY, "image": image}, format="json")
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["image"]


@pytest.mark.parametrize(
    "image",
    [
        "ubuntu",
        "nvcr.io/nvidia/pytorch:25.01-py3",
        "localhost:5000/team/trainer:v1.2",
        "[::1]:5000/trainer",
        "registry.example.com/a/b/c@sha256:" + "0" * 64,
        "trainer:latest@sha256:" + "f" * 64,
    ],
)
def test_every_form_of_oci_reference_is_accepted_as_image(ready, api_as, image):
    response = api_as(ready["member"]).post(URL, {**BODY, "image": image}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["image"] == image


def test_an_empty_mig_profile_is_accepted_as_none_as_the_schema_default_says(ready, api_as):
    response = api_as(ready["member"]).post(URL, {**BODY, "mig_profile": ""}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["mig_profile"] == ""


@pytest.mark.parametrize("gpus", ["8", 8.0, True])
def test_a_value_that_is_not_an_integer_where_an_integer_is_expected_is_a_400(ready, api_as, gpus):
    response = api_as(ready["member"]).post(URL, {**BODY, "gpus": gpus}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"gpus": ["A valid integer is required."]}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"image": 5}, "Not a valid string."),
        ({"command": ["python", 5]}, "Item 1: Not a valid string."),
        ({"env": {"EPOCHS": 3}}, "EPOCHS: Not a valid string."),
    ],
)
def test_a_number_where_a_string_is_expected_is_a_400_naming_the_field(
    ready, api_as, change, message
):
    response = api_as(ready["member"]).post(URL, {**BODY, **change}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {next(iter(change)): [message]}


@pytest.mark.parametrize("value", ["yes", 1, "true"])
def test_a_boolean_must_be_true_or_false(ready, api_as, value):
    body = {**BODY, "requeue_on_eviction": value}
    response = api_as(ready["member"]).post(URL, body, format="json")
    assert (response.status_code, response.json()["error"]["fields"]) == (
        400,
        {"requeue_on_eviction": ["Must be true or false."]},
    )


def test_the_list_filters_by_state(ready, submit, api_as):
    submit(name="a")
    submit(name="b")
    Workload.objects.filter(name="b").update(state="Cancelled")
    body = api_as(ready["viewer"]).get(URL, {"state": "Pending"}).json()
    assert [w["name"] for w in body["results"]] == ["a"]


@pytest.mark.parametrize("state", ["pending", "PENDING", "Pending"])
def test_the_state_filter_takes_the_value_in_any_case(ready, submit, api_as, state):
    submit(name="a")
    body = api_as(ready["viewer"]).get(URL, {"state": state}).json()
    assert [w["name"] for w in body["results"]] == ["a"]


def test_an_unknown_state_is_still_a_400_on_the_filter(ready, api_as):
    response = api_as(ready["viewer"]).get(URL, {"state": "sleeping"})
    assert (response.status_code, list(response.json()["error"]["fields"])) == (400, ["state"])


def test_a_waiting_workload_shows_why_and_its_queue_position(ready, submit, cycle, api_as):
    submit(name="big", gpus=8, replicas=8)
    submit(name="next", gpus=8)
    cycle()
    pending = api_as(ready["member"]).get(f"{URL}next/").json()["pending"]
    assert (pending["code"], pending["queue_position"]) == ("quota", 1)
    assert pending["message"] == "H100-80GB: 64 of 64 in use by acme, 8 more requested"


def test_a_waiting_workload_shows_its_estimated_start_as_a_range(ready, submit, cycle, api_as):
    submit(name="big", gpus=8, replicas=8, max_runtime=timedelta(hours=2))
    submit(name="next", gpus=8)
    cycle()
    pending = api_as(ready["member"]).get(f"{URL}next/").json()["pending"]
    assert (
        pending["estimated_start_low"]
        == pending["estimated_start"]
        == pending["estimated_start_high"]
        is not None
    )


def test_an_admitted_workload_shows_its_placements(ready, submit, cycle, api_as):
    submit(name="train-1", gpus=8, replicas=2)
    cycle()
    body = api_as(ready["member"]).get(f"{URL}train-1/").json()
    assert len(body["placements"]) == 2
    assert all(len(p["gpu_indices"]) == 8 for p in body["placements"])


def test_the_events_tell_the_workloads_story(ready, submit, cycle, api_as):
    submit(name="train-1")
    cycle()
    kinds = [e["kind"] for e in api_as(ready["member"]).get(f"{URL}train-1/events/").json()]
    assert kinds == ["submitted", "admitted", "launched"]


def test_a_submission_takes_a_fixed_number_of_queries(
    ready, api_as, django_capture_on_commit_callbacks
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = api_as(ready["member"])
    client.post(URL, {**BODY, "name": "warm"}, format="json")
    with CaptureQueriesContext(connection) as queries, django_capture_on_commit_callbacks():
        response = client.post(URL, BODY, format="json")
    assert response.status_code == 201
    # 19: one of them is billing's budget check (no budget with a hard stop here), one the
    # approved quota increases still to start, one the clusters' regions.
    assert len(queries) == 19, [query["sql"][:80] for query in queries]


def test_a_submitter_may_opt_out_of_requeue_on_eviction(ready, api_as):
    body = {**BODY, "requeue_on_eviction": False}
    answer = api_as(ready["member"]).post(URL, body, format="json").json()
    assert (answer["requeue_on_eviction"], answer["evictions"]) == (False, 0)
