"""The workload page's log pane: a fragment htmx loads, then asks again for the lines written
after the last one shown, while the workload may still write."""

import re

import pytest

from portal import clock
from scheduling import services
from scheduling.models import Workload, WorkloadLogTail
from tenants.permissions import Caller

from ..roles import READING

pytestmark = pytest.mark.django_db

PAGE = "/orgs/acme/projects/ai-dev/workloads/"
RUNTIME = {"SIMULATED_RUNTIME_SECONDS": "120"}
CONSOLE_READING = [(who, 302 if who == "anonymous" else status) for who, status in READING]
POLL = re.compile(r'hx-get="([^"]+)" hx-trigger="every 3s"')


@pytest.fixture
def running(actors, submit, cycle):
    """train-1, one replica, 30 s after its container started: five lines."""
    submit(name="train-1", gpus=8, env=RUNTIME)
    cycle()
    clock.advance(seconds=35)
    return actors


def _pane(client, query: str = "") -> str:
    return client.get(f"{PAGE}train-1/logs/{query}").content.decode()


def _lines(fragment: str) -> list[str]:
    return re.findall(r'<div class="log-line">([^<]*)</div>', fragment)


@pytest.mark.parametrize(("caller", "status"), CONSOLE_READING)
def test_every_member_sees_the_log_pane_a_viewer_too_and_nobody_else(
    running, client, caller, status
):
    if caller != "anonymous":
        client.force_login(running[caller])
    assert client.get(f"{PAGE}train-1/logs/").status_code == status


def test_the_workload_page_loads_its_log_pane(running, client):
    client.force_login(running["viewer"])
    page = client.get(f"{PAGE}train-1/").content.decode()
    assert 'id="workload-logs" role="log"' in page
    assert f'hx-get="{PAGE}train-1/logs/" hx-trigger="load"' in page


def test_the_pane_shows_the_lines_and_asks_for_those_after_the_last(running, client):
    client.force_login(running["member"])
    fragment = _pane(client)
    assert len(_lines(fragment)) == 5
    [poll] = POLL.findall(fragment)
    assert poll.startswith(f"{PAGE}train-1/logs/?after=")
    assert _lines(client.get(poll.replace("&amp;", "&")).content.decode()) == []
    clock.advance(seconds=20)
    newer = _lines(client.get(poll.replace("&amp;", "&")).content.decode())
    assert len(newer) == 2 and " step " in newer[0]


def test_a_workload_not_started_yet_says_so_and_the_pane_keeps_asking(actors, submit, client):
    submit(name="train-1")
    client.force_login(actors["member"])
    fragment = _pane(client)
    assert "train-1 has not started yet: it has no logs." in fragment
    assert POLL.search(fragment)


def test_an_ended_job_shows_its_last_lines_and_the_pane_stops_asking(running, client):
    clock.advance(seconds=200)
    Workload.objects.filter(name="train-1").update(state=Workload.State.SUCCEEDED)
    client.force_login(running["member"])
    fragment = _pane(client)
    assert _lines(fragment)[-1].endswith("training finished in 120s")
    assert not POLL.search(fragment)


def _removed(running, cluster) -> None:
    workload = Workload.objects.get(name="train-1")
    services.workload_cancel(caller=Caller(user=running["owner"]), workload=workload)
    services.workload_objects_delete(workload_id=workload.pk, backend=cluster)


def test_once_the_containers_are_removed_the_pane_shows_the_kept_tail_and_says_so(
    running, client, cluster
):
    _removed(running, cluster)
    client.force_login(running["viewer"])
    fragment = _pane(client)
    assert len(_lines(fragment)) == 5 and not POLL.search(fragment)
    assert "Its containers were removed: the last lines of its logs, kept at" in fragment


def test_once_the_containers_are_removed_with_nothing_kept_the_pane_says_the_logs_are_gone(
    running, client, cluster
):
    _removed(running, cluster)
    WorkloadLogTail.objects.all().delete()  # as before tails were kept
    client.force_login(running["member"])
    fragment = _pane(client)
    assert "their logs with them" in fragment and not POLL.search(fragment)


def test_an_after_that_is_no_time_reads_as_the_first_poll(running, client):
    client.force_login(running["member"])
    assert len(_lines(_pane(client, "?after=2026-13-45T99:00:00Z"))) == 5
