from collections import Counter
from datetime import timedelta

import pytest
from django.conf import settings

from portal import clock, events
from portal.errors import Conflict, Forbidden
from portal.events import Event
from scheduling import services
from scheduling.models import (
    GpuClass,
    Node,
    Placement,
    QuotaGrant,
    SimulatedObject,
    Workload,
    WorkloadEvent,
)
from scheduling.services.lifecycle import workloads_evict
from tenants.models import AuditEvent
from tenants.permissions import Caller

from ..factories import ProjectFactory
from .conftest import minutes

pytestmark = pytest.mark.django_db

# What a preemption evicted (requeued, or ended preempted).
EVICTED = Workload.objects.filter(preempted_by__isnull=False)


def test_a_higher_non_preemptible_tier_evicts_a_training_gang(full_h100, globex_serving, cycle):
    serving = globex_serving()
    cycle()
    serving.refresh_from_db()
    assert serving.state == Workload.State.ADMITTED
    assert EVICTED.count() == 1
    assert EVICTED.get().preempted_by == serving


def test_the_preempted_gang_releases_its_gpus_and_its_objects(full_h100, globex_serving, cycle):
    globex_serving()
    cycle()
    victim = EVICTED.get()
    assert not Placement.objects.filter(workload=victim, ended_at__isnull=True).exists()
    assert not SimulatedObject.objects.filter(name=victim.name).exists()


def test_the_preempted_gangs_timeline_names_the_workload_it_made_room_for(
    full_h100, globex_serving, cycle
):
    serving = globex_serving()
    cycle()
    event = EVICTED.get().events.get(kind="preempted")
    assert event.data["by"] == str(serving.pk)


def test_the_preempted_gang_is_handed_to_the_worker_for_teardown(
    full_h100, globex_serving, monkeypatch, django_capture_on_commit_callbacks
):
    released: list[dict] = []
    monkeypatch.setitem(events._subscribers, Event.WORKLOAD_RELEASED, [])
    events.subscribe(Event.WORKLOAD_RELEASED, lambda **payload: released.append(payload))
    globex_serving()
    with django_capture_on_commit_callbacks(execute=True):
        services.scheduling_cycle_run()
    victim = EVICTED.get()
    assert released == [{"workload_id": str(victim.pk)}]
    assert victim.teardown_due_at is not None


def test_the_same_tier_never_preempts(full_h100, submit, cycle):
    waiting = submit(name="late", gpus=8)
    cycle()
    waiting.refresh_from_db()
    assert waiting.state == Workload.State.PENDING
    assert not EVICTED.exists()


def test_cancelling_a_running_workload_releases_its_gpus(submit, cycle, advance, mia):
    workload = submit()
    cycle()
    advance(10)
    services.workload_cancel(caller=Caller(user=mia), workload=workload)
    workload.refresh_from_db()
    assert workload.state == Workload.State.CANCELLED
    assert not Placement.objects.filter(workload=workload, ended_at__isnull=True).exists()


def test_a_member_cannot_cancel_someone_elses_workload(submit, adam, mia):
    workload = submit(user=adam)
    with pytest.raises(Forbidden):
        services.workload_cancel(caller=Caller(user=mia), workload=workload)
    workload.refresh_from_db()
    assert workload.state == Workload.State.PENDING


def test_cancelling_a_finished_workload_is_a_conflict(submit, mia):
    workload = submit()
    services.workload_cancel(caller=Caller(user=mia), workload=workload)
    with pytest.raises(Conflict):
        services.workload_cancel(caller=Caller(user=mia), workload=workload)


def test_a_lost_node_requeues_the_whole_gang(submit, cycle, advance, cluster):
    gang = submit(gpus=8, replicas=2)
    cycle()
    advance(10)
    lost = Placement.objects.filter(workload=gang).first().node.name
    cluster.node_fail(name=lost)
    advance(5)
    gang.refresh_from_db()
    assert gang.state == Workload.State.PENDING
    assert not Placement.objects.filter(workload=gang, ended_at__isnull=True).exists()
    assert gang.events.filter(kind="requeued", message__contains=lost).exists()


def test_a_requeued_gang_is_placed_again_away_from_the_lost_node(submit, cycle, advance, cluster):
    gang = submit(gpus=8, replicas=2)
    cycle()
    lost = Placement.objects.filter(workload=gang).first().node.name
    cluster.node_fail(name=lost)
    services.inventory_sync(backend=cluster)
    cycle()
    gang.refresh_from_db()
    nodes = set(gang.placements.filter(ended_at__isnull=True).values_list("node__name", flat=True))
    assert gang.state == Workload.State.ADMITTED
    assert lost not in nodes
    assert not Node.objects.get(name=lost).ready


def notebook_using(submit, utilization: str):
    """A dev-tier notebook on one MIG slice whose GPU is busy at `utilization`."""
    return submit(
        name="nb",
        kind="notebook",
        tier="dev",
        gpus=0,
        mig_profile="mig-1g.10gb",
        mig_count=1,
        gpu_classes=("A100-80GB",),
        env={"SIMULATED_GPU_UTIL": utilization},
    )


def test_an_idle_notebook_is_warned_then_stopped(submit, cycle, advance):
    notebook = notebook_using(submit, "0")
    cycle()
    advance(10)
    advance(minutes(31).total_seconds())
    notebook.refresh_from_db()
    assert notebook.events.filter(kind="idle_warning").exists()
    assert notebook.state == Workload.State.RUNNING
    advance(minutes(30).total_seconds())
    notebook.refresh_from_db()
    assert notebook.state == Workload.State.CANCELLED
    assert "idle" in notebook.status_reason


def test_a_busy_notebook_is_left_alone(submit, cycle, advance):
    notebook = notebook_using(submit, "0.9")
    cycle()
    advance(10)
    advance(minutes(120).total_seconds())
    notebook.refresh_from_db()
    assert notebook.state == Workload.State.RUNNING
    assert not notebook.events.filter(kind="idle_warning").exists()


def test_draining_a_node_requeues_its_workloads_and_cordons_it(submit, cycle, advance):
    workload = submit()
    cycle()
    node = Placement.objects.get(workload=workload).node
    operator = Caller(user=type(workload.submitted_by).objects.create(username="op", is_staff=True))
    services.node_drain(caller=operator, node=node)
    workload.refresh_from_db()
    node.refresh_from_db()
    assert (workload.state, node.cordoned) == (Workload.State.PENDING, True)


def test_an_operators_requeue_is_audited_with_the_operator(submit, cycle):
    workload = submit()
    cycle()
    operator_user = type(workload.submitted_by).objects.create(
        username="op", email="ops@example.com", is_staff=True
    )
    services.workload_requeue_by_operator(caller=Caller(user=operator_user), workload=workload)
    event = AuditEvent.objects.get(action="workload.requeue")
    assert (event.actor, event.target_id) == (operator_user, str(workload.pk))
    assert event.payload == {"reason": "Requeued by operator ops@example.com."}


def test_a_node_lost_under_a_workload_takes_no_new_work_until_it_is_seen_ready(
    submit, cycle, advance, cluster
):
    gang = submit()
    cycle()
    advance(10)
    lost = gang.placements.get().node
    cluster.node_fail(name=lost.name)
    advance(5)
    cluster.node_recover(name=lost.name)
    lost.refresh_from_db()
    assert not lost.ready
    services.inventory_sync(backend=cluster)
    lost.refresh_from_db()
    assert lost.ready


def test_a_tenant_at_its_quota_evicts_its_own_training_for_production_inference(
    full_h100, submit, cycle
):
    serving = submit(name="serve", kind="inference", tier="inference-prod", gpus=8)
    cycle()
    serving.refresh_from_db()
    victim = EVICTED.get()
    assert serving.state == Workload.State.ADMITTED
    assert victim.project == serving.project


def test_a_requeued_workload_is_placed_again_only_once_its_old_objects_are_deleted(
    submit, cycle, cluster
):
    workload = submit()
    cycle()
    services.workload_requeue(workload_id=workload.pk, reason="Requeued.")  # teardown queued
    assert services.scheduling_cycle_run().admitted == ()
    services.workload_objects_delete(workload_id=workload.pk, backend=cluster)
    assert services.scheduling_cycle_run().admitted == (str(workload.pk),)


def test_an_evicted_gang_goes_back_to_the_queue_with_its_eviction_counted_and_a_backoff(
    full_h100, globex_serving, cycle
):
    globex_serving()
    cycle()
    victim = EVICTED.get()
    assert (victim.state, victim.evictions) == (Workload.State.PENDING, 1)
    assert victim.requeue_not_before == victim.events.get(kind="requeued").at + timedelta(
        seconds=30
    )
    assert [e.kind for e in victim.events.order_by("pk")][-2:] == ["preempted", "requeued"]


def test_an_evicted_gang_is_placed_again_once_its_backoff_has_passed(
    full_h100, globex_serving, cycle
):
    serving = globex_serving()
    cycle()  # evicts a gang; the worker deleted its objects
    services.workload_end(workload_id=serving.pk, state=Workload.State.SUCCEEDED, reason="")
    victim = EVICTED.get()
    assert str(victim.pk) not in cycle().admitted  # room again, but within its backoff
    clock.advance(seconds=31)
    assert str(victim.pk) in cycle().admitted


def test_a_gang_whose_submitter_opted_out_of_requeue_ends_preempted(
    full_h100, globex_serving, cycle
):
    Workload.objects.update(requeue_on_eviction=False)
    globex_serving()
    cycle()
    assert EVICTED.get().state == Workload.State.PREEMPTED


def test_a_gang_evicted_as_often_as_allowed_ends_preempted(full_h100, globex_serving, cycle):
    Workload.objects.update(evictions=3)  # PORTAL_EVICTIONS_MAX
    globex_serving()
    cycle()
    assert (EVICTED.get().state, EVICTED.get().evictions) == (Workload.State.PREEMPTED, 3)


@pytest.fixture
def acme_holds_every_lent_h100(full_h100, globex, bruno, submit):
    """Nobody is guaranteed an H100 now: all 64 are lent, acme holding them all; globex then
    asks for 40."""
    h100 = GpuClass.objects.get(name="H100-80GB")
    QuotaGrant.objects.filter(gpu_class=h100, resource="gpus").update(guarantee=0)
    QuotaGrant.objects.create(organization=globex, gpu_class=h100, guarantee=0, limit=64)
    clock.advance(seconds=settings.PORTAL_RECLAIM_AFTER_SECONDS)
    project = ProjectFactory(organization=globex, slug="web")
    for n in range(5):
        submit(name=f"fair-{n}", user=bruno, project=project, gpus=8)


def gpus_held_after(cycle) -> tuple[Counter, int, set]:
    result = cycle()
    held = Counter()
    for workload in Workload.objects.filter(state__in=Workload.ACTIVE_STATES):
        held[workload.project.organization.slug] += workload.gpus * workload.replicas
    reasons = {e.data["reason"] for e in WorkloadEvent.objects.filter(kind="preempted")}
    return held, len(result.preempted), reasons


def test_a_tenant_below_its_fair_share_reclaims_lent_gpus_from_one_above_it(
    settings, acme_holds_every_lent_h100, cycle
):
    settings.PORTAL_FAIR_SHARE_HALF_LIFE_HOURS = 0  # only what runs now counts
    assert gpus_held_after(cycle) == ({"acme": 32, "globex": 32}, 4, {"fair-share"})


def test_with_decayed_usage_a_newcomer_reclaims_past_the_even_split(
    acme_holds_every_lent_h100, cycle
):
    # acme used every H100 lately and globex nothing: globex's 40 GPUs all start.
    assert gpus_held_after(cycle) == ({"acme": 24, "globex": 40}, 5, {"fair-share"})


def test_a_workload_drained_for_a_reservation_is_requeued_with_no_preemptor(submit, cycle):
    guest = submit(name="guest")
    cycle()
    workloads_evict(
        reasons={str(guest.pk): "Capacity on H100-80GB in pool dgx is reserved for globex."},
        preempted_by={},
        event_data={str(guest.pk): {"by": None, "reason": "reservation", "reservation": "r1"}},
    )
    guest.refresh_from_db()
    assert (guest.state, guest.preempted_by_id, guest.evictions) == (
        Workload.State.PENDING,
        None,
        1,
    )
