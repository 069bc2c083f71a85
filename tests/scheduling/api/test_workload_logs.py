"""GET …/workloads/{name}/logs/: a workload's container logs as text, from the simulated
cluster: one replica's or all (prefixed), the tail, since a time, followed."""

from datetime import timedelta

import pytest

from portal import clock
from scheduling import services
from scheduling.models import Workload, WorkloadLogTail
from tenants.permissions import Caller

from ...roles import READING

pytestmark = pytest.mark.django_db

URL = "/api/v1/organizations/acme/projects/ai-dev/workloads/"
RUNTIME = {"SIMULATED_RUNTIME_SECONDS": "120"}


@pytest.fixture
def running(ready, submit, cycle):
    """train-1, two replicas, launched and 35 s into its run (30 s after its containers
    started): two header lines and three progress lines per replica."""
    submit(name="train-1", gpus=8, replicas=2, env=RUNTIME)
    cycle()
    clock.advance(seconds=35)
    return ready


def _logs(client, query: str = "", name: str = "train-1", **headers):
    return client.get(f"{URL}{name}/logs/{query}", **headers)


def _lines(response) -> list[str]:
    body = (
        b"".join(response.streaming_content) if response.streaming else response.content
    ).decode()
    return body.splitlines()


@pytest.mark.parametrize(("caller", "status"), READING)
def test_every_member_reads_the_logs_a_viewer_too_and_nobody_else(running, api_as, caller, status):
    client = api_as(None if caller == "anonymous" else running[caller])
    assert _logs(client).status_code == status


def test_a_read_only_token_of_a_viewer_reads_the_logs(running, acme, token_for):
    _, client = token_for(running["viewer"], acme, scope="read")
    assert _logs(client).status_code == 200


def test_an_unknown_workload_is_a_404(running, api_as):
    assert _logs(api_as(running["member"]), name="nothing-here").status_code == 404


def test_the_logs_are_plain_text_lines_of_every_replica_prefixed_oldest_first(running, api_as):
    response = _logs(api_as(running["member"]))
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    lines = _lines(response)
    assert len(lines) == 2 * 5
    assert [line.split("] ", 1)[0] for line in lines[:4]] == ["[replica 0"] * 2 + ["[replica 1"] * 2
    assert "NCCL initialised" in lines[0] and " epoch 1/" in lines[-1]


def test_one_replicas_lines_come_without_a_prefix(running, api_as):
    lines = _lines(_logs(api_as(running["member"]), "?replica=1"))
    assert len(lines) == 5
    assert lines[0].startswith("[20") and "rank 1/2" in lines[0]


def test_a_workload_of_one_replica_has_no_prefix(ready, submit, cycle, api_as):
    submit(name="solo", gpus=1, env=RUNTIME)
    cycle()
    clock.advance(seconds=35)
    lines = _lines(_logs(api_as(ready["member"]), name="solo"))
    assert len(lines) == 5 and not lines[0].startswith("[replica")


def test_the_tail_is_the_last_lines(running, api_as):
    client = api_as(running["member"])
    assert _lines(_logs(client, "?tail=3")) == _lines(_logs(client))[-3:]


@pytest.mark.parametrize("since", ["5s", "{at}"])
def test_since_is_a_duration_ago_or_a_time(running, api_as, since):
    client = api_as(running["member"])
    at = (clock.now() - timedelta(seconds=5)).isoformat()
    lines = _lines(_logs(client, "?since=" + since.format(at=at).replace("+", "%2B")))
    assert len(lines) == 2  # each replica's line of 30 s after its start (not of 20 s)


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("?tail=0", "tail"),
        ("?tail=10001", "tail"),
        ("?tail=many", "tail"),
        ("?replica=-1", "replica"),
        ("?replica=2", "replica"),
        ("?since=yesterday", "since"),
        ("?since=2026-06-01T09:00:00", "since"),
        ("?since=999999d", "since"),
        ("?follow=maybe", "follow"),
        ("?lines=10", "lines"),
    ],
)
def test_an_invalid_parameter_is_a_400_naming_it(running, api_as, query, field):
    response = _logs(api_as(running["member"]), query)
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]


def test_a_replica_the_workload_lacks_is_refused_with_its_replicas(running, api_as):
    fields = _logs(api_as(running["member"]), "?replica=2").json()["error"]["fields"]
    assert fields == {"replica": ["train-1 has 2 replicas: 0 to 1."]}


def test_a_workload_not_started_is_a_409(ready, submit, api_as):
    submit(name="waiting")
    response = _logs(api_as(ready["member"]), name="waiting")
    assert (response.status_code, response.json()["error"]["code"]) == (
        409,
        "workload_not_started",
    )


def test_a_refusal_is_json_even_to_a_client_that_accepts_text(ready, submit, api_as):
    submit(name="waiting")
    response = _logs(api_as(ready["member"]), name="waiting", HTTP_ACCEPT="text/plain")
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"]["code"] == "workload_not_started"


def test_the_logs_of_a_workload_removed_with_nothing_kept_are_gone(running, api_as, cluster):
    workload = Workload.objects.get(name="train-1")
    services.workload_cancel(caller=Caller(user=running["owner"]), workload=workload)
    services.workload_objects_delete(workload_id=workload.pk, backend=cluster)
    WorkloadLogTail.objects.all().delete()  # as before tails were kept
    response = _logs(api_as(running["member"]))
    assert (response.status_code, response.json()["error"]["code"]) == (409, "logs_gone")


def test_following_an_ended_job_streams_every_line_to_its_summary_and_ends(running, api_as):
    clock.advance(seconds=200)  # past its end; the sync has not removed its objects yet
    response = _logs(api_as(running["member"]), "?follow=true&replica=0")
    assert response.streaming
    lines = _lines(response)
    assert lines[-1].endswith("training finished in 120s") and len(lines) == 2 + 11 + 2


def test_following_stops_after_the_longest_follow_time(running, api_as, settings):
    settings.PORTAL_LOGS_FOLLOW_MAX_SECONDS = 0
    lines = _lines(_logs(api_as(running["member"]), "?follow=true"))
    assert len(lines) == 2 * 5
