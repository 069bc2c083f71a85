"""The Celery application: configured from Django settings (CELERY_*), tasks autodiscovered."""

import os

from celery import Celery, signals

from portal import logs, metrics

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings.local")

app = Celery("portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# A request's id goes with the tasks it queues and comes back in their log lines.
signals.before_task_publish.connect(logs.task_publish_tag, weak=False)
signals.task_prerun.connect(logs.task_context_enter, weak=False)
signals.task_postrun.connect(logs.task_context_exit, weak=False)
# Failures and retries counted per task, for /metrics.
signals.task_failure.connect(metrics.celery_task_failed, weak=False)
signals.task_retry.connect(metrics.celery_task_retried, weak=False)


@signals.worker_init.connect(weak=False)
def worker_metrics(**_signal) -> None:
    """With PORTAL_WORKER_METRICS_PORT set, the worker serves what its processes counted."""
    from django.conf import settings

    if settings.PORTAL_WORKER_METRICS_PORT:
        metrics.worker_metrics_serve(
            port=settings.PORTAL_WORKER_METRICS_PORT, token=settings.PORTAL_METRICS_TOKEN
        )


def queue_depth(task_name: str, *, queue: str | None = None) -> int:
    """How many messages wait in the broker queue that `task_name` is routed to, or in the
    named `queue` (declaring it first: a queue no worker consumed from yet is an empty one,
    not an error)."""
    name = queue or app.amqp.router.route({}, task_name)["queue"].name
    with app.connection_for_read() as connection:
        return connection.default_channel.queue_declare(queue=name).message_count
