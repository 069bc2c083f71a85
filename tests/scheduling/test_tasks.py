"""Tasks delegate to services; once their retries are spent, the failure is recorded."""

import uuid

import pytest

from portal import clock
from portal.celery import app, queue_depth
from scheduling import services, tasks
from scheduling.cluster import ClusterError
from scheduling.models import ProvisioningRecord, Workload

from ..factories import ProjectFactory

pytestmark = pytest.mark.django_db


def test_the_provisioning_task_provisions_through_the_service(cluster, quotas, ai_dev):
    assert tasks.project_provision(str(ai_dev.pk), "eu-west") == ProvisioningRecord.State.READY


def test_a_project_is_provisioned_by_one_task_per_cluster(cluster, ai_dev):
    queue = app.amqp.router.route({}, tasks.project_provision.name)["queue"].name
    with app.connection_for_write() as connection:
        connection.default_channel.queue_purge(queue)
    try:
        assert tasks.project_provision(str(ai_dev.pk)) == ["eu-west", "us-east"]
        assert queue_depth(tasks.project_provision.name) == 2
    finally:
        with app.connection_for_write() as connection:
            connection.default_channel.queue_purge(queue)


def test_with_cluster_queues_each_clusters_task_goes_to_its_own_queue(settings):
    settings.PORTAL_CLUSTER_QUEUES = True
    prefix = settings.CELERY_TASK_DEFAULT_QUEUE.removesuffix("default")
    assert tasks.cluster_route("eu-west") == {"queue": f"{prefix}cluster-eu-west"}


def test_without_cluster_queues_a_clusters_task_keeps_its_usual_queue(settings):
    settings.PORTAL_CLUSTER_QUEUES = False
    assert tasks.cluster_route("eu-west") == {}


def test_the_cycle_task_reports_what_it_admitted(submit):
    submit()
    assert tasks.scheduling_cycle() == {"ran": True, "admitted": 1, "pending": 0}


def test_provisioning_that_keeps_failing_is_marked_failed_with_the_reason(cluster, ai_dev):
    error = ClusterError("503 Service Unavailable", status=503, retryable=True)
    tasks.project_provision.on_failure(error, "task-id", (str(ai_dev.pk),), {}, None)
    record = ProvisioningRecord.objects.get(project=ai_dev)
    assert record.state == ProvisioningRecord.State.FAILED
    assert "503 Service Unavailable" in record.error


def test_a_launch_that_keeps_failing_fails_the_workload_and_frees_its_gpus(submit):
    workload = submit()
    services.scheduling_cycle_run()  # admitted; every launch attempt fails
    error = ClusterError("connection refused", retryable=True)
    tasks.workloads_launch.on_failure(error, "task-id", ([str(workload.pk)],), {}, None)
    workload.refresh_from_db()
    assert workload.state == Workload.State.FAILED
    assert "connection refused" in workload.status_reason
    assert not workload.placements.filter(ended_at__isnull=True).exists()


def test_a_teardown_that_keeps_failing_is_shown_on_the_timeline(submit):
    workload = submit()
    error = ClusterError("timeout", retryable=True)
    tasks.workload_objects_delete.on_failure(error, "task-id", (str(workload.pk),), {}, None)
    assert workload.events.filter(kind="teardown_failed").exists()


def test_a_late_launch_of_a_workload_that_no_longer_exists_does_nothing(submit, cycle):
    workload = submit()
    Workload.objects.filter(pk=workload.pk).delete()
    assert tasks.workloads_launch([str(workload.pk)], "eu-west") == 0


def test_giving_up_on_a_workload_that_no_longer_exists_raises_nothing(submit):
    workload = submit()
    Workload.objects.filter(pk=workload.pk).delete()
    error = ClusterError("timeout", retryable=True)
    # Before, both raised DoesNotExist inside the worker's failure handler.
    tasks.workloads_launch.on_failure(error, "task-id", ([str(workload.pk)],), {}, None)
    tasks.workload_objects_delete.on_failure(error, "task-id", (str(workload.pk),), {}, None)


def test_a_cycles_admissions_are_launched_twenty_five_a_task():
    launch_queue = app.amqp.router.route({}, tasks.workloads_launch.name)["queue"].name
    with app.connection_for_write() as connection:
        connection.default_channel.queue_purge(launch_queue)
    try:
        # Never placed: the settings' cluster, on the launches' shared queue.
        tasks.workloads_launch_request(workload_ids=[str(uuid.uuid4()) for _ in range(60)])
        assert queue_depth(tasks.workloads_launch.name) == 3
    finally:
        with app.connection_for_write() as connection:
            connection.default_channel.queue_purge(launch_queue)


def test_with_cluster_queues_a_launch_waiting_in_the_clusters_queue_is_not_redone(submit, settings):
    settings.PORTAL_CLUSTER_QUEUES = True
    workload = submit()
    services.scheduling_cycle_run()  # admitted in eu-west; its launch waits in eu-west's queue
    cluster_queue = tasks.cluster_route("eu-west")["queue"]
    with app.connection_for_write() as connection:
        connection.default_channel.queue_purge(cluster_queue)
    tasks.workloads_launch.apply_async(
        args=[[str(workload.pk)], "eu-west"], **tasks.cluster_route("eu-west")
    )
    try:
        clock.advance(seconds=settings.PORTAL_RECONCILE_SECONDS + 1)
        assert tasks.cluster_reconcile("eu-west")["launched"] == 0
    finally:
        with app.connection_for_write() as connection:
            connection.default_channel.queue_purge(cluster_queue)


def test_with_cluster_queues_a_cycles_admissions_are_queued_on_their_clusters_queue(
    submit, settings
):
    settings.PORTAL_CLUSTER_QUEUES = True
    queues = [
        tasks.cluster_route("eu-west")["queue"],
        app.amqp.router.route({}, tasks.workloads_launch.name)["queue"].name,
    ]

    def purge():
        with app.connection_for_write() as connection:
            for queue in queues:
                connection.default_channel.queue_purge(queue)

    purge()
    workload = submit()
    services.scheduling_cycle_run()  # admitted in eu-west
    try:
        tasks.workloads_launch_request(workload_ids=[str(workload.pk)])
        depths = [queue_depth(tasks.workloads_launch.name, queue=queue) for queue in queues]
        assert depths == [1, 0]
    finally:
        purge()


def test_with_cluster_queues_a_launch_in_no_queue_is_redone_after_the_grace(submit, settings):
    settings.PORTAL_CLUSTER_QUEUES = True
    submit()
    services.scheduling_cycle_run()  # admitted; its launch task was lost
    with app.connection_for_write() as connection:
        connection.default_channel.queue_purge(tasks.cluster_route("eu-west")["queue"])
    clock.advance(seconds=settings.PORTAL_RECONCILE_SECONDS + 1)
    assert tasks.cluster_reconcile("eu-west")["launched"] == 1


def test_a_rerun_of_one_clusters_record_is_queued_on_that_clusters_queue(cluster, ai_dev, settings):
    settings.PORTAL_CLUSTER_QUEUES = True
    queue = tasks.cluster_route("us-east")["queue"]
    with app.connection_for_write() as connection:
        connection.default_channel.queue_purge(queue)
    try:
        tasks.project_provision_in_cluster(project_id=str(ai_dev.pk), cluster="us-east")
        assert queue_depth(tasks.project_provision.name, queue=queue) == 1
    finally:
        with app.connection_for_write() as connection:
            connection.default_channel.queue_purge(queue)


def test_the_provisioning_task_skips_a_cluster_the_organization_may_not_use(cluster, globex):
    web = ProjectFactory(organization=globex, slug="web")  # no H100 quota; eu-west is H100 only
    assert tasks.project_provision(str(web.pk), "eu-west") is None
    assert not ProvisioningRecord.objects.filter(project=web).exists()
