"""The reconciler finishes what a lost task left half-done, once the grace period has passed."""

from datetime import timedelta

import pytest
from django.utils import timezone

from portal import clock
from scheduling import services
from scheduling.models import ProvisioningRecord, SimulatedObject, Workload
from tenants import services as tenant_services
from tenants.models import Project
from tenants.permissions import Caller

pytestmark = pytest.mark.django_db

GRACE = timedelta(seconds=60)


def reconcile(cluster) -> services.Reconciled:
    return services.cluster_reconcile(backend=cluster, grace=GRACE)


def test_a_workload_admitted_but_never_launched_is_launched_after_the_grace(submit, cluster):
    workload = submit()
    services.scheduling_cycle_run()  # admitted; its launch task is lost
    clock.advance(seconds=61)
    assert reconcile(cluster).launched == (str(workload.pk),)
    workload.refresh_from_db()
    assert workload.launched_at is not None
    assert SimulatedObject.objects.filter(kind="Job", name=workload.name).exists()


def test_a_launch_never_started_is_left_alone_while_launches_wait_in_the_queue(submit, cluster):
    submit()
    services.scheduling_cycle_run()  # its launch task waits behind a burst of others
    clock.advance(seconds=61)
    result = services.cluster_reconcile(backend=cluster, grace=GRACE, launches_queued=True)
    assert result.launched == ()


def test_a_launch_never_started_is_launched_once_it_waited_ten_graces_behind_a_busy_queue(
    submit, cluster
):
    workload = submit()
    services.scheduling_cycle_run()  # its queue never empties: the cluster's other tasks
    clock.advance(seconds=9 * 60 + 1)
    assert services.cluster_reconcile(backend=cluster, grace=GRACE, launches_queued=True) == (
        services.Reconciled()
    )
    clock.advance(seconds=60)
    result = services.cluster_reconcile(backend=cluster, grace=GRACE, launches_queued=True)
    assert result.launched == (str(workload.pk),)


def test_a_launch_that_started_and_stopped_is_redone_the_grace_after_it_started(submit, cluster):
    workload = submit()
    services.scheduling_cycle_run()
    clock.advance(seconds=600)  # it waited in the queue for ten minutes
    Workload.objects.filter(pk=workload.pk).update(launch_started_at=clock.now())  # then died
    clock.advance(seconds=30)
    assert services.cluster_reconcile(backend=cluster, grace=GRACE, launches_queued=True) == (
        services.Reconciled()
    )
    clock.advance(seconds=31)
    result = services.cluster_reconcile(backend=cluster, grace=GRACE, launches_queued=True)
    assert result.launched == (str(workload.pk),)


def test_nothing_is_redone_within_the_grace(submit, cluster):
    submit()
    services.scheduling_cycle_run()
    clock.advance(seconds=30)
    assert reconcile(cluster) == services.Reconciled()


def deleted(workload: Workload) -> bool:
    """Its objects were deleted: gone, or terminating through their grace period."""
    stored = SimulatedObject.objects.filter(name=workload.name)
    return all("deletionTimestamp" in row.manifest["metadata"] for row in stored)


def test_the_objects_of_an_ended_workload_are_deleted_when_its_teardown_was_lost(
    submit, cycle, mia, cluster
):
    workload = submit()
    cycle()
    services.workload_cancel(caller=Caller(user=mia), workload=workload)  # teardown task lost
    clock.advance(seconds=61)
    assert reconcile(cluster).torn_down == (str(workload.pk),)
    workload.refresh_from_db()
    assert workload.teardown_due_at is None
    assert deleted(workload)


def test_a_preempted_workloads_objects_are_deleted_when_its_teardown_was_lost(
    full_h100, globex_serving, cluster
):
    globex_serving()
    services.scheduling_cycle_run()  # the victim's teardown and the preemptor's launch are lost
    victim = Workload.objects.get(preempted_by__isnull=False)
    clock.advance(seconds=61)
    reconcile(cluster)
    victim.refresh_from_db()
    assert victim.teardown_due_at is None
    assert deleted(victim)


def test_a_deleted_project_whose_deprovisioning_was_lost_is_deprovisioned(
    alice, ai_dev, cluster, submit
):
    workload = submit()
    long_ago = timezone.now() - timedelta(days=1)
    ProvisioningRecord.objects.filter(project=ai_dev).update(updated_at=long_ago)
    tenant_services.project_delete(caller=Caller(user=alice), project=ai_dev)  # task lost
    Project.objects.filter(pk=ai_dev.pk).update(deleted_at=timezone.now() - GRACE * 2)
    assert reconcile(cluster).deprovisioned == (str(ai_dev.pk),)
    workload.refresh_from_db()
    assert workload.state == Workload.State.CANCELLED
    assert ProvisioningRecord.objects.get(project=ai_dev).state == ProvisioningRecord.State.REMOVED


def test_a_project_whose_provisioning_was_lost_is_provisioned(cluster, acme):
    project = Project.objects.create(
        organization=acme,
        slug="lost",
        name="Lost",
        namespace="acme-lost",
        created_at=timezone.now() - GRACE * 2,
    )
    assert reconcile(cluster).provisioned == (str(project.pk),)
    assert ProvisioningRecord.objects.get(project=project).state == ProvisioningRecord.State.READY


def test_a_step_the_cluster_refuses_for_now_is_left_for_the_next_pass(submit, cluster):
    workload = submit()
    services.scheduling_cycle_run()
    ProvisioningRecord.objects.filter(project=workload.project).update(
        state=ProvisioningRecord.State.PENDING
    )  # the launch raises a retryable ClusterError: the namespace is not ready
    clock.advance(seconds=61)
    assert reconcile(cluster).launched == ()
    workload.refresh_from_db()
    assert (workload.state, workload.launched_at) == (Workload.State.ADMITTED, None)
