"""The task side's health: /healthz/workers answers 503 naming what is stale when no worker
has taken a task or no scheduling cycle has finished within a few periods, 200 otherwise; the
same ages on /metrics, and a banner on the operators' pages. Time moves by writing the
heartbeats in the past or advancing the portal's clock, never by sleeping."""

from datetime import timedelta
from socket import gethostname

import pytest
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from portal import clock, health
from portal.models import WorkerHeartbeat
from portal.tasks import worker_heartbeat
from scheduling import services

from ..factories import UserFactory

pytestmark = pytest.mark.django_db

URL = "/healthz/workers"
TOKEN = "metrics-test-token"
BANNER = "Background work has stopped"


def worker_seen(seconds_ago: float = 0) -> None:
    WorkerHeartbeat.objects.update_or_create(
        hostname="celery@demo",
        defaults={"seen_at": timezone.now() - timedelta(seconds=seconds_ago)},
    )


def cycle_finished() -> None:
    services.scheduling_cycle_run()


@pytest.fixture
def healthy():
    worker_seen()
    cycle_finished()


@pytest.fixture
def operator_client(client):
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    return client


def test_the_task_side_is_ok_when_a_worker_took_a_task_and_a_cycle_finished_just_now(
    client, healthy
):
    response = client.get(URL)
    assert (response.status_code, response.json()["checks"]) == (
        200,
        {"scheduling_cycle": "ok", "worker": "ok"},
    )


def test_no_worker_ever_seen_is_a_503_that_names_the_worker(client):
    cycle_finished()
    response = client.get(URL)
    body = response.json()
    assert (response.status_code, body["status"], body["checks"]["scheduling_cycle"]) == (
        503,
        "stale",
        "ok",
    )
    assert body["checks"]["worker"] == "no worker has taken a task yet"


def test_a_worker_silent_for_three_heartbeat_periods_is_a_503_that_says_how_long(client, settings):
    settings.PORTAL_WORKER_HEARTBEAT_SECONDS = 30
    cycle_finished()
    worker_seen(seconds_ago=95)
    body = client.get(URL).json()
    assert body["checks"]["worker"] == "no worker has taken a task for 95 s (stale after 90 s)"


def test_a_worker_seen_within_three_periods_is_not_stale(client, settings):
    settings.PORTAL_WORKER_HEARTBEAT_SECONDS = 30
    cycle_finished()
    worker_seen(seconds_ago=85)
    assert client.get(URL).status_code == 200


def test_no_cycle_finished_within_a_minute_is_a_503_that_names_the_cycle(client, healthy):
    clock.advance(seconds=61)  # the cycle's time is the portal clock's now()
    body = client.get(URL).json()
    assert (body["status"], body["checks"]["worker"]) == ("stale", "ok")
    assert body["checks"]["scheduling_cycle"] == (
        "no scheduling cycle has finished for 61 s (stale after 60 s)"
    )


def test_a_slow_cycle_period_allows_three_of_its_periods(client, healthy, settings):
    settings.PORTAL_CYCLE_SECONDS = 60
    clock.advance(seconds=170)
    assert client.get(URL).status_code == 200
    clock.advance(seconds=20)
    assert client.get(URL).status_code == 503


def test_the_probe_answers_whatever_the_host(client, healthy):
    assert client.get(URL, HTTP_HOST="10.0.0.7:8000").status_code == 200


def test_the_worker_heartbeat_task_records_the_worker_that_ran_it():
    worker_heartbeat.apply()  # in this process, whose host name the request carries
    assert list(WorkerHeartbeat.objects.values_list("hostname", flat=True)) == [gethostname()]


def scrape(client) -> dict:
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    families = text_string_to_metric_families(response.content.decode())
    return {
        (sample.name, sample.labels.get("heartbeat")): sample.value
        for family in families
        for sample in family.samples
        if sample.name.startswith("portal_heartbeat_")
    }


def test_metrics_give_the_seconds_since_the_worker_and_the_cycle_were_last_seen(client, settings):
    settings.PORTAL_METRICS_TOKEN = TOKEN
    settings.PORTAL_WORKER_HEARTBEAT_SECONDS = 30
    worker_seen(seconds_ago=40)
    cycle_finished()
    clock.advance(seconds=20)
    samples = scrape(client)
    assert 40 <= samples["portal_heartbeat_age_seconds", "worker"] < 45
    assert 20 <= samples["portal_heartbeat_age_seconds", "scheduling_cycle"] < 25
    assert samples["portal_heartbeat_stale_after_seconds", "worker"] == 90


def test_metrics_give_an_infinite_age_for_a_worker_never_seen(client, settings):
    settings.PORTAL_METRICS_TOKEN = TOKEN
    assert scrape(client)["portal_heartbeat_age_seconds", "worker"] == float("inf")


@pytest.mark.parametrize("url", ["/staff/cluster/", "/admin/"])
def test_operators_pages_show_a_banner_naming_what_is_stale(operator_client, url):
    cycle_finished()
    page = operator_client.get(url).content.decode()
    assert BANNER in page
    assert "no worker has taken a task yet" in page


@pytest.mark.parametrize("url", ["/staff/cluster/", "/admin/"])
def test_operators_pages_show_no_banner_while_the_task_side_is_healthy(
    operator_client, healthy, url
):
    assert BANNER not in operator_client.get(url).content.decode()


def test_tenants_never_see_the_banner(client, alice):
    client.force_login(alice)
    assert BANNER not in client.get("/").content.decode()


def test_every_registered_heartbeat_is_reported():
    assert [standing.name for standing in health.heartbeats()] == ["scheduling_cycle", "worker"]
