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
