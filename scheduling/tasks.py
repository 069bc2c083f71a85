"""Celery tasks of scheduling: each loads ids, takes the configured backend and calls the
service of the same name. Cluster failures are retried with exponential backoff and jitter; when
the retries run out, the failure is recorded where users and operators see it."""

import functools
import logging
from collections.abc import Callable

from celery import Task, shared_task

from portal.celery import queue_depth
from portal.db import advisory_lock

from . import services
from .backends import get_backend
from .cluster import ClusterError

logger = logging.getLogger(__name__)

RETRY = {
    "autoretry_for": (ClusterError,),
    "retry_backoff": 2,
    "retry_backoff_max": 300,
    "retry_jitter": True,
    "max_retries": 10,
}


def one_at_a_time(task: Callable) -> Callable:
    """A periodic task that runs once at a time across every worker: a second beat, or a pass
    that outlasts its interval, finds the lock taken and does nothing (None). For passes whose
    work a concurrent twin would repeat: a reservation's state change published (mailed) twice,
    an idle warning recorded twice, a gang requeued again by a pass that read it before the
    first requeued it."""

    @functools.wraps(task)
    def run(*args, **kwargs):
        with advisory_lock(f"task:{task.__module__}.{task.__name__}") as taken:
            if not taken:
                logger.info("%s is already running elsewhere; skipped", task.__name__)
                return None
            return task(*args, **kwargs)

    return run


def cluster_task(give_up: Callable[..., object]):
    """A retried task that calls `give_up(..., reason=...)` with the task's own arguments once
    its retries are spent."""

    class GivesUp(Task):
        def on_failure(self, exc, task_id, args, kwargs, einfo):
            give_up(*args, **kwargs, reason=str(exc))

    return shared_task(base=GivesUp, **RETRY)


@cluster_task(give_up=services.provisioning_give_up)
def project_provision(project_id: str) -> str:
    return services.project_provision(project_id=project_id, backend=get_backend()).state


@cluster_task(give_up=services.provisioning_give_up)
def project_deprovision(project_id: str) -> str:
    return services.project_deprovision(project_id=project_id, backend=get_backend()).state


@cluster_task(give_up=services.provisioning_give_up)
def cluster_provision() -> str:
    return services.cluster_provision(backend=get_backend()).state


@shared_task(**RETRY)
@one_at_a_time
def inventory_sync() -> list[str] | None:
    return services.inventory_sync(backend=get_backend())


@shared_task
def scheduling_cycle() -> dict:
    result = services.scheduling_cycle_run()
    return {"ran": result.ran, "admitted": len(result.admitted), "pending": result.pending}


def scheduling_cycle_request(**_event) -> None:
    """Queue a cycle, unless one already waits in the queue: requests fold into it, so a burst
    of submissions queues one cycle, not one each."""
    if services.scheduling_cycle_request():
        scheduling_cycle.delay()


# Workloads per launch task: a cycle's admissions are shared among the worker processes, and a
# task killed with its worker leaves at most this many for the reconciler.
LAUNCH_CHUNK = 25


@cluster_task(give_up=services.workloads_launch_give_up)
def workloads_launch(workload_ids: list[str]) -> int:
    return len(services.workloads_launch(workload_ids=workload_ids, backend=get_backend()))


def workloads_launch_request(*, workload_ids: list[str]) -> None:
    """Queue the launches of a cycle's admissions, LAUNCH_CHUNK workloads a task."""
    for at in range(0, len(workload_ids), LAUNCH_CHUNK):
        workloads_launch.delay(workload_ids[at : at + LAUNCH_CHUNK])


@cluster_task(give_up=services.workload_objects_delete_give_up)
def workload_objects_delete(workload_id: str) -> None:
    services.workload_objects_delete(workload_id=workload_id, backend=get_backend())


@shared_task(**RETRY)
@one_at_a_time
def workloads_sync() -> int | None:
    return services.workloads_sync(backend=get_backend())


@shared_task(**RETRY)
@one_at_a_time
def idle_and_runtime_check() -> None:
    services.idle_and_runtime_check(backend=get_backend())


@shared_task
def cluster_reconcile() -> dict:
    queued = queue_depth(workloads_launch.name) > 0
    result = services.cluster_reconcile(backend=get_backend(), launches_queued=queued)
    return {kind: len(ids) for kind, ids in vars(result).items()}


@shared_task
@one_at_a_time
def reservations_advance() -> dict | None:
    return services.reservations_advance()


MAIL_RETRY = {
    "autoretry_for": (OSError,),
    "retry_backoff": True,
    "retry_jitter": True,
    "max_retries": 8,
}


@shared_task(**MAIL_RETRY)
def reservation_email_send(
    reservation_id: str, change: str = "", occurrence: str = "", short_gpus: int | None = None
) -> int:
    return services.reservation_email_send(
        reservation_id=reservation_id, change=change, occurrence=occurrence, short_gpus=short_gpus
    )


@shared_task
def quota_requests_advance() -> dict:
    return services.quota_requests_advance()


@shared_task(**MAIL_RETRY)
def quota_request_email_send(quota_request_id: str, change: str = "") -> int:
    return services.quota_request_email_send(quota_request_id=quota_request_id, change=change)
