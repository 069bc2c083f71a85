"""The kernel's periodic task: a worker shows it takes tasks (portal/health.py)."""

from celery import shared_task

from portal import health


@shared_task(bind=True)
def worker_heartbeat(self) -> None:
    health.worker_heartbeat_record(hostname=self.request.hostname or "unknown")
