"""GET …/workloads/{name}/logs/ after the workload ended and its containers were removed: the
tail of each replica's log kept at teardown, said so in the headers; filters apply, following
just ends; nothing kept is still `logs_gone`."""

import pytest

from portal import clock
from scheduling import services
from scheduling.models import Workload, WorkloadLogTail
from tenants.permissions import Caller

from ...roles import READING

pytestmark = pytest.mark.django_db

URL = "/api/v1/organizations/acme/projects/ai-dev/workloads/train-1/logs/"
RUNTIME = {"SIMULATED_RUNTIME_SECONDS": "120"}


@pytest.fixture
def torn_down(ready, submit, cycle, cluster):
    """train-1, two replicas, ran to its end (120 s) and was torn down by the status sync."""
    submit(name="train-1", gpus=8, replicas=2, env=RUNTIME)
    cycle()
    clock.advance(seconds=200)
    services.workloads_sync(backend=cluster)
    assert Workload.objects.get(name="train-1").objects_deleted_at is not None
    return ready


def _lines(response) -> list[str]:
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return body.decode().splitlines()


@pytest.mark.parametrize(("caller", "status"), READING)
def test_every_member_reads_the_kept_tail_a_viewer_too_and_nobody_else(
    torn_down, api_as, caller, status
):
    client = api_as(None if caller == "anonymous" else torn_down[caller])
    assert client.get(URL).status_code == status


def test_the_logs_of_an_ended_workload_are_readable_after_its_teardown(torn_down, api_as):
    response = api_as(torn_down["viewer"]).get(URL)
    lines = _lines(response)
    assert response.status_code == 200 and len(lines) == 2 * (2 + 11 + 2)
    assert lines[-1].startswith("[replica 1]") and lines[-1].endswith("training finished in 120s")


def test_the_headers_say_the_lines_are_the_kept_tail_and_not_truncated(torn_down, api_as):
    response = api_as(torn_down["member"]).get(URL)
    kept_at = WorkloadLogTail.objects.filter(workload__name="train-1").first().captured_at
    assert (response["X-Logs-Source"], response["X-Logs-Truncated"]) == ("kept-tail", "false")
    assert response["X-Logs-Kept-At"] == kept_at.isoformat()


def test_a_tail_cut_by_the_lines_setting_is_said_truncated(
    ready, submit, cycle, cluster, api_as, settings
):
    settings.PORTAL_LOGS_KEPT_LINES = 3
    submit(name="train-1", gpus=8, replicas=2, env=RUNTIME)
    cycle()
    clock.advance(seconds=200)
    services.workloads_sync(backend=cluster)
    response = api_as(ready["member"]).get(URL)
    assert (len(_lines(response)), response["X-Logs-Truncated"]) == (6, "true")


def test_the_logs_of_a_running_workload_come_from_the_cluster(ready, submit, cycle, api_as):
    submit(name="train-1", gpus=8, env=RUNTIME)
    cycle()
    clock.advance(seconds=35)
    response = api_as(ready["member"]).get(URL)
    assert response["X-Logs-Source"] == "cluster" and "X-Logs-Kept-At" not in response


def test_tail_replica_and_since_filter_the_kept_tail(torn_down, api_as):
    client = api_as(torn_down["member"])
    whole = _lines(client.get(f"{URL}?replica=1"))
    assert _lines(client.get(f"{URL}?replica=1&tail=3")) == whole[-3:]
    assert _lines(client.get(f"{URL}?replica=1&since=2026-01-01T00:00:00Z")) == whole
    assert _lines(client.get(f"{URL}?since=1s")) == []  # nothing was written since it ended


def test_following_the_kept_tail_answers_it_and_ends(torn_down, api_as):
    response = api_as(torn_down["member"]).get(f"{URL}?follow=true&replica=0")
    assert response.streaming and response["X-Logs-Source"] == "kept-tail"
    assert _lines(response)[-1].endswith("training finished in 120s")


def test_a_workload_torn_down_with_nothing_kept_has_its_logs_gone(torn_down, api_as):
    WorkloadLogTail.objects.all().delete()
    response = api_as(torn_down["member"]).get(URL)
    assert (response.status_code, response.json()["error"]["code"]) == (409, "logs_gone")


def test_a_cancelled_workloads_logs_are_kept_up_to_its_cancellation(
    ready, submit, cycle, cluster, api_as
):
    submit(name="train-1", gpus=8, env=RUNTIME)
    cycle()
    clock.advance(seconds=35)
    workload = Workload.objects.get(name="train-1")
    services.workload_cancel(caller=Caller(user=ready["owner"]), workload=workload)
    services.workload_objects_delete(workload_id=workload.pk, backend=cluster)
    assert len(_lines(api_as(ready["member"]).get(URL))) == 2 + 3
