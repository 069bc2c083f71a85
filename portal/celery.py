"""The Celery application: configured from Django settings (CELERY_*), tasks autodiscovered."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings.local")

app = Celery("portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def queue_depth(task_name: str) -> int:
    """How many messages wait in the broker queue that `task_name` is routed to (declaring
    it first: a queue no worker consumed from yet is an empty one, not an error)."""
    queue = app.amqp.router.route({}, task_name)["queue"]
    with app.connection_for_read() as connection:
        return connection.default_channel.queue_declare(queue=queue.name).message_count
