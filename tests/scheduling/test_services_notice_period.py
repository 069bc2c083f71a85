"""The notice period on the simulated cluster, through scheduling cycles: an evicted
workload's pods keep their GPUs until its tier's notice has passed on the portal's clock; its
preemptor's pods wait for them (it is admitted, not running, and nothing is metered), and the
engine places no other work on them before they are free."""

import pytest

from scheduling.models import Placement, PriorityTier, SimulatedObject, Workload

from .conftest import h100_guarantee, simulated_runtime

pytestmark = pytest.mark.django_db

NOTICE = 300


@pytest.fixture
def running_h100(submit, cycle, advance):
    """Eight acme gangs of a day fill the H100s, running for an hour, at a tier whose evicted
    work gets five minutes' notice."""
    PriorityTier.objects.filter(name="training").update(notice_seconds=NOTICE)
    workloads = [submit(name=f"fill-{n}", gpus=8, **simulated_runtime(86400)) for n in range(8)]
    cycle()
    advance(60)
    advance(3600)
    return workloads


@pytest.fixture
def serve(globex, bruno, submit):
    """globex, guaranteed 8 H100, starts a production service of ``gpus`` H100s."""
    from ..factories import ProjectFactory

    h100_guarantee(globex, 8)
    project = ProjectFactory(organization=globex, slug="web")
    return lambda gpus=8: submit(
        name="serve",
        user=bruno,
        project=project,
        kind="inference",
        tier="inference-prod",
        gpus=gpus,
    )


def test_the_evicted_workloads_objects_terminate_through_its_notice(running_h100, serve, cycle):
    serve()
    cycle()
    [victim] = Workload.objects.filter(preempted_by__isnull=False)
    job = SimulatedObject.objects.get(kind="Job", name=victim.name)
    assert job.manifest["metadata"]["deletionGracePeriodSeconds"] == NOTICE


def test_the_preemptor_is_admitted_but_not_running_before_the_notice_has_passed(
    running_h100, serve, cycle, advance
):
    preemptor = serve()
    cycle()
    advance(NOTICE - 10)
    preemptor.refresh_from_db()
    waiting = (preemptor.state, Placement.objects.filter(workload=preemptor).first().running_at)
    advance(20)
    preemptor.refresh_from_db()
    assert (waiting, preemptor.state) == ((Workload.State.ADMITTED, None), Workload.State.RUNNING)


def test_no_other_work_is_placed_on_gpus_evicted_work_holds_before_its_notice_has_passed(
    running_h100, serve, submit, cycle, advance
):
    serve(gpus=4)
    cycle()  # one gang of 8 evicted: 4 of its GPUs are the service's, 4 are left
    late = submit(name="late", gpus=4, **simulated_runtime(3600))
    cycle()
    late.refresh_from_db()
    during = late.state
    advance(NOTICE)
    cycle()
    late.refresh_from_db()
    assert (during, late.state) == (Workload.State.PENDING, Workload.State.ADMITTED)


def test_an_evicted_workload_waits_for_its_old_pods_before_it_is_placed_again(
    running_h100, serve, cycle
):
    serve()
    cycle()
    [victim] = Workload.objects.filter(preempted_by__isnull=False)
    assert (victim.requeue_not_before - victim.eviction_log.get().at).total_seconds() == NOTICE
