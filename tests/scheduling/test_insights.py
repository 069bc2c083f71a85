"""Operators' insights: each rule finds its problem from the queue, the GPU readings and the
reservations, and stays quiet when the problem is not there."""

from datetime import timedelta

import pytest
import yaml
from django.conf import settings

from portal import clock
from scheduling import insights
from scheduling.models import GpuClass, Node, NodePool, Reservation
from tenants.permissions import Caller

from .test_services_preemption_and_failures import notebook_using

pytestmark = pytest.mark.django_db


@pytest.fixture
def found(django_user_model):
    operator = django_user_model.objects.create_user(
        username="ops", email="ops@example.com", password="x", is_staff=True
    )

    def rules() -> dict[str, insights.Insight]:
        return {
            insight.rule: insight
            for insight in insights.insights(caller=Caller(user=operator), now=clock.now())
        }

    rules.operator = operator
    return rules


def h100_filled(submit, cycle, advance, *, utilization="0.1", memory="0.5"):
    """Eight 8-GPU jobs hold every H100, busy at ``utilization``, read once by monitoring."""
    env = {
        "SIMULATED_GPU_UTIL": utilization,
        "SIMULATED_GPU_MEMORY": memory,
        "SIMULATED_RUNTIME_SECONDS": "86400",
    }
    for n in range(8):
        submit(name=f"fill-{n}", gpus=8, env=env)
    cycle()
    advance(10)


def queue(submit, count: int, gpu_class: str = "H100-80GB"):
    for n in range(count):
        submit(name=f"wait-{gpu_class.lower()}-{n}", gpus=8, gpu_classes=(gpu_class,))


def test_idle_gpus_with_a_long_queue_are_work_blocked_before_the_gpu(submit, cycle, advance, found):
    h100_filled(submit, cycle, advance, utilization="0.1")
    queue(submit, 5)
    assert "average 10% GPU utilization while 5 wait" in (
        found()["low_utilization_long_queue"].finding
    )


def test_busy_gpus_with_a_long_queue_are_no_insight(submit, cycle, advance, found):
    h100_filled(submit, cycle, advance, utilization="0.9")
    queue(submit, 5)
    assert "low_utilization_long_queue" not in found()


def test_readings_monitoring_stopped_giving_are_not_trusted(submit, cycle, advance, found):
    h100_filled(submit, cycle, advance, utilization="0.1")
    queue(submit, 5)
    clock.advance(seconds=insights.READING_FRESH.total_seconds() + 60)
    assert "low_utilization_long_queue" not in found()


def test_a_queue_on_one_class_while_another_idles_is_concentrated_demand(
    submit, cycle, advance, found
):
    h100_filled(submit, cycle, advance, utilization="0.9")
    queue(submit, 3)
    clock.advance(seconds=insights.WAIT_LONG.total_seconds() + 60)
    insight = found()["demand_on_one_class"]
    assert (insight.title, "A100-80GB has 8 idle" in insight.finding) == (
        "Demand concentrated on H100-80GB",
        True,
    )


def test_concentrated_demand_counts_no_cordoned_gpus_as_idle_elsewhere(
    submit, cycle, advance, found
):
    h100_filled(submit, cycle, advance, utilization="0.9")
    queue(submit, 3)
    Node.objects.filter(name="a100-01").update(cordoned=True)
    clock.advance(seconds=insights.WAIT_LONG.total_seconds() + 60)
    assert "A100-80GB has 4 idle" in found()["demand_on_one_class"].finding


def test_a_short_wait_on_one_class_is_no_insight(submit, cycle, advance, found):
    h100_filled(submit, cycle, advance, utilization="0.9")
    queue(submit, 3)
    assert "demand_on_one_class" not in found()


def test_full_gpu_memory_with_idle_compute_is_found_with_its_workloads(
    submit, cycle, advance, found
):
    h100_filled(submit, cycle, advance, utilization="0.1", memory="0.95")
    insight = found()["memory_full_compute_idle"]
    assert (len(insight.subjects), insight.subjects[0]) == (
        8,
        "acme/ai-dev/fill-0: memory 95%, compute 10%",
    )


def test_full_gpu_memory_with_busy_compute_is_no_insight(submit, cycle, advance, found):
    h100_filled(submit, cycle, advance, utilization="0.9", memory="0.95")
    assert "memory_full_compute_idle" not in found()


def reserved(acme, *, gpus: int, since: timedelta) -> Reservation:
    now = clock.now()
    return Reservation.objects.create(
        organization=acme,
        gpu_class=GpuClass.objects.get(name="H100-80GB"),
        pool=NodePool.objects.get(name="dgx-h100"),
        gpus=gpus,
        starts_at=now - since,
        ends_at=now + timedelta(hours=4),
        state=Reservation.State.ACTIVE,
    )


def test_an_active_reservation_barely_used_is_reserved_capacity_idle(cluster, acme, found):
    reserved(acme, gpus=16, since=timedelta(hours=1))
    assert (
        found()["reserved_capacity_idle"]
        .subjects[0]
        .startswith("acme: 0 of 16 H100-80GB in dgx-h100 in use")
    )


def test_a_reservation_in_use_is_no_insight(submit, cycle, advance, acme, found):
    reserved(acme, gpus=16, since=timedelta(hours=1))
    h100_filled(submit, cycle, advance)
    assert "reserved_capacity_idle" not in found()


def test_a_reservation_just_begun_has_time_to_fill(cluster, acme, found):
    reserved(acme, gpus=16, since=timedelta(minutes=5))
    assert "reserved_capacity_idle" not in found()


def test_a_notebook_idle_past_the_limit_is_an_idle_notebook(submit, cycle, advance, found):
    notebook_using(submit, "0")
    cycle()
    advance(10)
    advance(insights.NOTEBOOK_IDLE.total_seconds() + 60)
    assert found()["idle_notebooks"].subjects[0].startswith("acme/ai-dev/nb: idle since")


def test_a_busy_notebook_is_no_insight(submit, cycle, advance, found):
    notebook_using(submit, "0.9")
    cycle()
    advance(10)
    advance(insights.NOTEBOOK_IDLE.total_seconds() + 60)
    assert "idle_notebooks" not in found()


def test_the_page_shows_each_insight_in_words(submit, cycle, advance, operator_client):
    h100_filled(submit, cycle, advance, utilization="0.1", memory="0.95")
    assert (
        "GPU memory full, compute idle" in operator_client.get("/staff/insights/").content.decode()
    )


def test_a_quiet_cluster_says_nothing_is_wrong(cluster, operator_client):
    assert "no rule finds a problem now" in operator_client.get("/staff/insights/").content.decode()


def test_a_tenant_is_refused_the_insights(cluster, alice, client):
    client.force_login(alice)
    assert client.get("/staff/insights/").status_code == 403


def test_the_check_records_what_monitoring_sees_of_each_running_gpu_workload(
    submit, cycle, advance
):
    workload = submit(
        name="seen", gpus=1, env={"SIMULATED_GPU_UTIL": "0.3", "SIMULATED_GPU_MEMORY": "0.7"}
    )
    cycle()
    advance(10)
    workload.refresh_from_db()
    assert (workload.gpu_utilization, workload.gpu_memory_used, bool(workload.gpu_seen_at)) == (
        0.3,
        0.7,
        True,
    )


def test_every_insight_rule_has_a_prometheus_alert_of_its_name():
    alerts = yaml.safe_load((settings.BASE_DIR / "deploy/prometheus/alerts.yaml").read_text())
    named = {
        rule["labels"]["insight"]
        for group in alerts["groups"]
        for rule in group["rules"]
        if "insight" in rule.get("labels", {})
    }
    assert named == {
        "low_utilization_long_queue",
        "demand_on_one_class",
        "memory_full_compute_idle",
        "reserved_capacity_idle",
        "idle_notebooks",
        "unpriced_usage",  # billing's, registered at ExtensionPoint.OPERATOR_INSIGHTS
    }


def test_a_mig_reservation_counts_the_instances_of_its_profile_in_use(submit, cycle, acme, found):
    now = clock.now()
    Reservation.objects.create(
        organization=acme,
        gpu_class=GpuClass.objects.get(name="A100-80GB"),
        pool=NodePool.objects.get(name="a100-mig"),
        gpus=4,
        mig_profile="mig-1g.10gb",
        starts_at=now - timedelta(hours=1),
        ends_at=now + timedelta(hours=4),
        state=Reservation.State.ACTIVE,
    )
    notebook_using(submit, "0.9")
    cycle()
    assert (
        found()["reserved_capacity_idle"]
        .subjects[0]
        .startswith("acme: 1 of 4 A100-80GB mig-1g.10gb in a100-mig in use")
    )


def test_insights_over_running_work_are_per_cluster(submit, cycle, advance, found):
    env = {"SIMULATED_GPU_UTIL": "0.1", "SIMULATED_GPU_MEMORY": "0.95"}
    submit(name="train", gpus=8, env=env)  # H100s: eu-west
    submit(name="serve", gpus=1, gpu_classes=("L4",), env=env)  # L4s: us-east
    cycle()
    advance(10)
    every = insights.insights(caller=Caller(user=found.operator), now=clock.now())
    stuck = {i.cluster: i.subjects for i in every if i.rule == "memory_full_compute_idle"}
    assert stuck == {
        "eu-west": ["acme/ai-dev/train: memory 95%, compute 10%"],
        "us-east": ["acme/ai-dev/serve: memory 95%, compute 10%"],
    }
