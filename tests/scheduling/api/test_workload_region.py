"""A workload may be pinned to a region (a cluster's): an unknown one is a 400 naming `region`;
a pinned workload runs only there, and waits while its region has no room."""

import pytest

from scheduling.models import Placement, Workload

from .test_workloads import BODY, URL

pytestmark = pytest.mark.django_db


def test_an_unknown_region_is_a_400_naming_region_and_submits_nothing(ready, api_as):
    response = api_as(ready["member"]).post(URL, {**BODY, "region": "mars"}, format="json")
    assert response.status_code == 400, response.content
    assert "region" in response.json()["error"]["fields"]
    assert not Workload.objects.exists()


def test_a_known_region_is_accepted_and_answered(ready, api_as):
    body = {**BODY, "region": "eu-west"}
    assert api_as(ready["member"]).post(URL, body, format="json").json()["region"] == "eu-west"


def test_without_a_region_the_workload_may_run_anywhere(ready, api_as):
    assert api_as(ready["member"]).post(URL, BODY, format="json").json()["region"] == ""


def test_a_workload_pinned_to_a_region_runs_in_its_cluster(ready, submit, cycle):
    workload = submit(name="serve", gpu_classes=("L4",), gpus=1, region="us-east")
    cycle()
    clusters = Placement.objects.filter(workload=workload).values_list(
        "node__pool__cluster__name", flat=True
    )
    assert set(clusters) == {"us-east"}


def test_a_workload_pinned_to_a_region_without_its_gpu_class_waits(ready, submit, cycle):
    workload = submit(name="train", gpus=8, region="us-east")  # the H100s are in eu-west
    cycle()
    workload.refresh_from_db()
    assert workload.state == Workload.State.PENDING


def test_a_placed_workload_says_which_cluster_and_region_it_runs_in(ready, submit, cycle, api_as):
    submit(name="serve", gpu_classes=("L4",), gpus=1)
    cycle()
    body = api_as(ready["member"]).get(f"{URL}serve/").json()
    assert body["runs_in"] == {"cluster": "us-east", "region": "us-east"}
    assert [(p["cluster"], p["region"]) for p in body["placements"]] == [("us-east", "us-east")]


def test_the_list_says_where_each_workload_runs_and_none_for_one_waiting(
    ready, submit, cycle, api_as
):
    submit(name="train", gpus=8)
    cycle()
    submit(name="waits", gpus=8)
    listed = api_as(ready["member"]).get(URL).json()["results"]
    runs_in = {w["name"]: w["runs_in"] for w in listed}
    assert runs_in == {"train": {"cluster": "eu-west", "region": "eu-west"}, "waits": None}
