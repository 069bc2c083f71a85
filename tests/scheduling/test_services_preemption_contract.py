"""The preemption contract through a scheduling cycle: a tier's minimum run time and eviction
cap protect its work; each eviction records its notice and the work it lost (since the last
checkpoint, or since the start), and shows them on the workload's timeline."""

from datetime import timedelta
from decimal import Decimal

import pytest

from portal import clock
from scheduling import services
from scheduling.models import Eviction, Placement, PriorityTier, SimulatedObject, Workload
from tenants.permissions import Caller

from ..factories import UserFactory
from .conftest import simulated_runtime

pytestmark = pytest.mark.django_db

EVICTED = Workload.objects.filter(preempted_by__isnull=False)


def training_tier(**contract) -> None:
    PriorityTier.objects.filter(name="training").update(**contract)


@pytest.fixture
def running_h100(submit, cycle, advance):
    """Eight acme gangs of a day fill the H100s, running for an hour."""
    workloads = [submit(name=f"fill-{n}", gpus=8, **simulated_runtime(86400)) for n in range(8)]
    cycle()
    advance(60)
    advance(3600)
    return workloads


@pytest.fixture
def evicted(running_h100, globex_serving, cycle):
    """globex's production service evicts one of them, the training tier's contract set first:
    the eviction's record."""

    def evict(**contract) -> Eviction:
        training_tier(**contract)
        globex_serving()
        cycle()
        return Eviction.objects.get()

    return evict


def lost_since(workload: Workload, since) -> Decimal:
    """What the eviction now costs ``workload`` since ``since`` (or each replica's start)."""
    now = clock.now()
    return sum(
        Decimal(8 * int((now - max(p.running_at, since or p.running_at)).total_seconds()))
        for p in Placement.objects.filter(workload=workload)
    )


def test_work_within_its_tiers_minimum_run_time_is_not_preempted(
    running_h100, globex_serving, cycle
):
    training_tier(min_run_time=timedelta(hours=2))
    globex_serving()
    cycle()
    assert not EVICTED.exists()


def test_work_past_its_tiers_minimum_run_time_is_preempted(running_h100, globex_serving, cycle):
    training_tier(min_run_time=timedelta(minutes=30))
    globex_serving()
    cycle()
    assert EVICTED.count() == 1


def test_work_evicted_as_often_as_its_tiers_cap_is_spared(running_h100, globex_serving, cycle):
    training_tier(max_evictions=1)
    Workload.objects.filter(name__startswith="fill-").update(evictions=1)
    globex_serving()
    cycle()
    assert not EVICTED.exists()


def test_an_eviction_records_the_notice_of_the_victims_tier(evicted):
    assert evicted(notice_seconds=120).notice_seconds == 120


def test_without_a_tier_notice_an_eviction_records_kubernetes_default(evicted):
    assert evicted().notice_seconds == 30


def test_an_eviction_without_checkpoints_loses_the_gpu_seconds_since_the_start(evicted):
    eviction = evicted()
    assert eviction.gpu_seconds_lost == lost_since(eviction.workload, None)


def test_an_eviction_loses_only_the_gpu_seconds_since_the_reported_checkpoint(
    running_h100, globex_serving, cycle, mia
):
    checkpoint = clock.now() - timedelta(minutes=5)
    for workload in running_h100:
        services.workload_checkpoint_report(
            caller=Caller(user=mia), workload=workload, at=checkpoint
        )
    globex_serving()
    cycle()
    eviction = Eviction.objects.get()
    assert (eviction.lost_since, eviction.gpu_seconds_lost) == (checkpoint, Decimal(8 * 300))


def test_an_eviction_counts_lost_work_in_the_metered_unit_per_class(evicted):
    eviction = evicted()
    assert (eviction.gpu_class.name, eviction.resource_seconds_lost) == (
        "H100-80GB",
        int(lost_since(eviction.workload, None)),
    )


def test_the_victims_timeline_shows_the_notice_and_the_work_lost(evicted):
    eviction = evicted(notice_seconds=120)
    event = eviction.workload.events.get(kind="preempted")
    assert (event.data["notice_seconds"], event.data["gpu_seconds_lost"]) == (
        120,
        f"{eviction.gpu_seconds_lost:f}",
    )


def test_the_victim_with_a_recent_checkpoint_is_the_one_evicted(
    running_h100, globex_serving, cycle, mia
):
    saved = running_h100[3]
    services.workload_checkpoint_report(caller=Caller(user=mia), workload=saved)
    globex_serving()
    cycle()
    assert EVICTED.get() == saved


def test_the_simulated_cluster_launches_pods_with_their_tiers_notice(submit, cycle):
    training_tier(notice_seconds=120)
    workload = submit(name="train-1", gpus=8)
    cycle()
    job = SimulatedObject.objects.get(name=workload.name, kind="Job").manifest
    assert job["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 120


def test_an_evicted_workload_is_metered_up_to_its_eviction_not_through_its_notice(evicted):
    eviction = evicted(notice_seconds=600)
    ended = set(
        Placement.objects.filter(workload=eviction.workload).values_list("ended_at", flat=True)
    )
    assert ended == {eviction.at}


def test_the_workloads_admin_page_lists_its_evictions(evicted, client):
    eviction = evicted(notice_seconds=120)
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    page = client.get(f"/admin/scheduling/workload/{eviction.workload.pk}/change/")
    assert f"{eviction.gpu_seconds_lost}" in page.content.decode()
