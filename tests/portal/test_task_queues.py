"""Each kind of work has its own broker queue, and beat keeps what operators change."""

from datetime import timedelta

import pytest
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from portal.beat import DefaultsOnlyDatabaseScheduler
from portal.celery import app, queue_depth

KINDS = {
    "scheduling.tasks.scheduling_cycle": "cycle",
    "scheduling.tasks.workloads_launch": "cluster",
    "scheduling.tasks.workloads_sync": "sync",
    "scheduling.tasks.cluster_reconcile": "sync",
    "scheduling.tasks.project_provision": "provisioning",
    "tenants.tasks.invitation_email_send": "mail",
}


def queue_of(task: str) -> str:
    return app.amqp.router.route({}, task)["queue"].name


@pytest.mark.parametrize(("task", "kind"), KINDS.items())
def test_each_kind_of_work_goes_to_its_own_queue(task, kind):
    assert queue_of(task).endswith(f"-{kind}")


def test_every_task_of_the_apps_has_a_queue_of_its_kind():
    app.loader.import_default_modules()
    ours = [name for name in app.tasks if name.startswith(("scheduling.", "tenants."))]
    assert [name for name in ours if queue_of(name).endswith("-default")] == []


def test_a_worker_without_queues_named_takes_every_queue():
    consumed = {queue.name for queue in app.amqp.queues.consume_from.values()}
    assert {queue_of(task) for task in KINDS} <= consumed


# transaction=True: django-celery-beat closes the connection, which a test transaction forbids.
@pytest.mark.django_db(transaction=True)
def test_beat_installs_the_missing_entries_and_keeps_an_operators_interval():
    every_minute, _ = IntervalSchedule.objects.get_or_create(every=60, period="seconds")
    PeriodicTask.objects.create(
        name="scheduling-cycle", task="scheduling.tasks.scheduling_cycle", interval=every_minute
    )
    DefaultsOnlyDatabaseScheduler(app=app)
    cycle = PeriodicTask.objects.get(name="scheduling-cycle")
    assert timedelta(seconds=cycle.interval.every) == timedelta(minutes=1)
    assert PeriodicTask.objects.filter(name="workloads-sync").exists()


@pytest.mark.django_db(transaction=True)
def test_a_periodic_run_expires_when_the_next_is_due_so_slow_passes_never_pile_up():
    DefaultsOnlyDatabaseScheduler(app=app)
    sync = PeriodicTask.objects.get(name="workloads-sync")
    assert sync.expire_seconds == sync.interval.every


def test_the_depth_of_a_queue_counts_the_messages_waiting_in_it():
    launch = "scheduling.tasks.workloads_launch"
    with app.connection_for_write() as connection:
        connection.default_channel.queue_purge(queue_of(launch))
    try:
        for _ in range(2):
            app.send_task(launch, args=[["00000000-0000-0000-0000-000000000000"]])
        assert queue_depth(launch) == 2
    finally:
        with app.connection_for_write() as connection:
            connection.default_channel.queue_purge(queue_of(launch))
