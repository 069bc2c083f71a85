"""A simulated cluster switched off by an operator (the demo's "cluster unreachable"): past
the grace it is unreachable, its running work says so in the console and the API and stops
being metered at the last time it was seen; switched on again, its work is followed again."""

import pytest

from portal import clock
from scheduling import tasks
from scheduling.models import Cluster, Workload
from tenants.models import AuditEvent

from ..factories import UserFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/organizations/acme/projects/ai-dev/workloads/"


@pytest.fixture
def operator_client(client):
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    return client


def _switch(operator_client, action: str, name: str = "eu-west"):
    cluster = Cluster.objects.get(name=name)
    return operator_client.post(
        "/admin/scheduling/cluster/", {"action": action, "_selected_action": [cluster.pk]}
    )


@pytest.fixture
def running(submit, cycle, advance):
    """Training running in eu-west, the cluster seen just now."""
    workload = submit()
    cycle()
    advance(10)
    tasks.inventory_sync("eu-west")
    workload.refresh_from_db()
    assert workload.state == Workload.State.RUNNING
    return workload


@pytest.fixture
def switched_off(running, operator_client, settings):
    """eu-west switched off from admin, and its inventory sync run past the grace."""
    seen = Cluster.objects.get(name="eu-west").last_seen_at
    _switch(operator_client, "answers_stop")
    clock.advance(seconds=settings.PORTAL_CLUSTER_UNREACHABLE_SECONDS + 1)
    tasks.inventory_sync("eu-west")
    return seen


def test_a_switched_off_cluster_within_the_grace_is_still_ready(running, operator_client):
    _switch(operator_client, "answers_stop")
    clock.advance(seconds=60)
    tasks.inventory_sync("eu-west")
    assert Cluster.objects.get(name="eu-west").state == Cluster.State.READY


def test_past_the_grace_the_switched_off_cluster_is_unreachable(switched_off):
    states = dict(Cluster.objects.values_list("name", "state"))
    assert states == {"eu-west": "unreachable", "us-east": "ready"}


def test_its_running_work_is_metered_only_until_the_cluster_was_last_seen(running, switched_off):
    assert running.placements.get().ended_at == switched_off


def test_the_api_says_its_running_work_is_in_an_unreachable_cluster(
    running, switched_off, api_as, mia
):
    body = api_as(mia).get(f"{URL}{running.name}/").json()
    assert (body["state"], body["runs_in"]) == ("Running", None)
    assert body["status_reason"].startswith("Cluster unreachable")


def test_the_console_says_its_running_work_is_in_an_unreachable_cluster(
    running, switched_off, client, mia
):
    client.force_login(mia)
    page = client.get("/orgs/acme/projects/ai-dev/workloads/").content.decode()
    assert "Cluster unreachable" in page


def test_switched_on_again_it_is_ready_and_its_work_is_followed_again(
    running, switched_off, operator_client
):
    _switch(operator_client, "answers_resume")
    tasks.inventory_sync("eu-west")
    running.refresh_from_db()
    assert Cluster.objects.get(name="eu-west").state == Cluster.State.READY
    assert (running.state, running.status_reason) == (Workload.State.RUNNING, "")
    assert running.placements.filter(ended_at__isnull=True).count() == 1


def test_switching_a_cluster_off_and_on_is_audited(running, operator_client):
    _switch(operator_client, "answers_stop")
    _switch(operator_client, "answers_resume")
    actions = AuditEvent.objects.filter(action__startswith="cluster.").values_list(
        "action", flat=True
    )
    assert list(actions.order_by("at")) == [
        "cluster.simulated_silent",
        "cluster.simulated_answering",
    ]


def test_a_kubernetes_cluster_cannot_be_switched_off(operator_client, cluster):
    Cluster.objects.filter(name="us-east").update(backend=Cluster.Backend.KUBERNETES)
    _switch(operator_client, "answers_stop", name="us-east")
    assert not AuditEvent.objects.filter(action="cluster.simulated_silent").exists()
