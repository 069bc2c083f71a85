"""Celery tasks of scheduling: each loads ids, takes the backend of its cluster and calls the
service of the same name. Cluster failures are retried with exponential backoff and jitter; when
the retries run out, the failure is recorded where users and operators see it.

Work in the clusters runs per cluster, one task invocation each, so that a slow or unreachable
cluster holds up only its own: a task called without a cluster (beat, an event) queues itself
once per cluster concerned, each on the cluster's own queue when PORTAL_CLUSTER_QUEUES is on."""

import functools
import logging
from collections.abc import Callable

from celery import Task, shared_task
from django.conf import settings

from portal.celery import queue_depth
from portal.db import advisory_lock

from . import selectors, services
from .backends import backend_named
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
    first requeued it. A pass of one cluster locks that cluster's only."""

    @functools.wraps(task)
    def run(*args, **kwargs):
        of = "".join(f":{value}" for value in (*args, *kwargs.values()))
        with advisory_lock(f"task:{task.__module__}.{task.__name__}{of}") as taken:
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


def cluster_route(cluster: str) -> dict:
    """The `apply_async` options of a task of the named cluster: the cluster's own queue,
    `cluster-<name>`, when PORTAL_CLUSTER_QUEUES is on (a worker must consume it: see
    docs/operators/workers.md); otherwise the task's usual queue."""
    if not settings.PORTAL_CLUSTER_QUEUES or not cluster:
        return {}
    prefix = settings.CELERY_TASK_DEFAULT_QUEUE.removesuffix("default")
    return {"queue": f"{prefix}cluster-{cluster}"}


def each_cluster(task, *args) -> list[str]:
    """Queue `task` once per cluster, the cluster's name after `args`; the names. With no
    cluster in the inventory yet, once for the settings' backend ("")."""
    names = selectors.cluster_names() or [""]
    for name in names:
        task.apply_async(args=[*args, name], **cluster_route(name))
    return names


@cluster_task(give_up=services.provisioning_give_up)
def project_provision(project_id: str, cluster: str | None = None) -> str | list[str] | None:
    if cluster is None:
        return each_cluster(project_provision, project_id)
    record = services.project_provision(
        project_id=project_id,
        backend=backend_named(cluster),
        cluster=selectors.cluster_named(cluster),
    )
    return record.state if record is not None else None  # None: nothing to do there


@cluster_task(give_up=services.provisioning_give_up)
def project_deprovision(project_id: str, cluster: str | None = None) -> str | list[str]:
    if cluster is None:
        return each_cluster(project_deprovision, project_id)
    return services.project_deprovision(
        project_id=project_id,
        backend=backend_named(cluster),
        cluster=selectors.cluster_named(cluster),
    ).state


@cluster_task(give_up=services.cluster_provisioning_give_up)
def cluster_provision(cluster: str | None = None) -> str | list[str]:
    if cluster is None:
        return each_cluster(cluster_provision)
    return services.cluster_provision(
        backend=backend_named(cluster), cluster=selectors.cluster_named(cluster)
    ).state


def in_cluster(task):
    """An event's subscriber that queues `task` with the event's payload: in the cluster the
    event names, on that cluster's queue (an operator's rerun of one record), else in each
    cluster."""

    def queue(*, cluster: str | None = None, **payload) -> None:
        if cluster is None:
            task.delay(**payload)
        else:
            task.apply_async(kwargs={**payload, "cluster": cluster}, **cluster_route(cluster))

    return queue


project_provision_in_cluster = in_cluster(project_provision)
project_deprovision_in_cluster = in_cluster(project_deprovision)
cluster_provision_in_cluster = in_cluster(cluster_provision)


@shared_task(**RETRY)
@one_at_a_time
def inventory_sync(cluster: str | None = None) -> list[str] | None:
    if cluster is None:
        return each_cluster(inventory_sync)
    return services.cluster_inventory_sync(
        cluster=selectors.cluster_named(cluster), backend=backend_named(cluster)
    )


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
def workloads_launch(workload_ids: list[str], cluster: str | None = None) -> int:
    if cluster is None:
        return len(workloads_by_cluster(workloads_launch, workload_ids))
    return len(services.workloads_launch(workload_ids=workload_ids, backend=backend_named(cluster)))


def workloads_by_cluster(
    task, workload_ids: list[str], *, chunk: int | None = None
) -> dict[str, list[str]]:
    """Queue `task` for the workloads of each cluster (by their placements; "": never placed,
    the settings' backend), `chunk` of them a task (None: a cluster's all in one), on the
    cluster's queue; the ids by cluster."""
    clusters = selectors.workload_clusters(workload_ids)
    by_cluster: dict[str, list[str]] = {}
    for workload_id in workload_ids:
        by_cluster.setdefault(clusters.get(str(workload_id), ""), []).append(workload_id)
    for name, ids in by_cluster.items():
        size = chunk or len(ids)
        for at in range(0, len(ids), size):
            task.apply_async(args=[ids[at : at + size], name], **cluster_route(name))
    return by_cluster


def workloads_launch_request(*, workload_ids: list[str]) -> None:
    """Queue the launches of a cycle's admissions, LAUNCH_CHUNK workloads of one cluster a
    task, on the cluster's queue: one read of their clusters in the cycle's process, rather
    than a task a chunk that only queued them again by cluster."""
    workloads_by_cluster(workloads_launch, workload_ids, chunk=LAUNCH_CHUNK)


@cluster_task(give_up=services.workload_objects_delete_give_up)
def workload_objects_delete(workload_id: str, cluster: str | None = None) -> None:
    if cluster is None:
        name = selectors.workload_clusters([workload_id]).get(str(workload_id), "")
        workload_objects_delete.apply_async(args=[workload_id, name], **cluster_route(name))
        return
    services.workload_objects_delete(workload_id=workload_id, backend=backend_named(cluster))


@shared_task(**RETRY)
@one_at_a_time
def workloads_sync(cluster: str | None = None) -> int | list[str] | None:
    if cluster is None:
        return each_cluster(workloads_sync)
    return services.workloads_sync(
        backend=backend_named(cluster), cluster=selectors.cluster_named(cluster)
    )


@shared_task(**RETRY)
@one_at_a_time
def idle_and_runtime_check(cluster: str | None = None) -> list[str] | None:
    if cluster is None:
        return each_cluster(idle_and_runtime_check)
    services.idle_and_runtime_check(
        backend=backend_named(cluster), cluster=selectors.cluster_named(cluster)
    )
    return None


def launches_queued(cluster: str) -> bool:
    """Whether a launch may still wait in a queue: the shared one (a cycle's chunks), or,
    with PORTAL_CLUSTER_QUEUES, the cluster's own, where each chunk is queued again for its
    cluster. The cluster's queue holds its other tasks too: any message there counts, which
    can only defer a relaunch, never launch twice."""
    if queue_depth(workloads_launch.name) > 0:
        return True
    queue = cluster_route(cluster).get("queue")
    return queue is not None and queue_depth(workloads_launch.name, queue=queue) > 0


@shared_task
def cluster_reconcile(cluster: str | None = None) -> dict | list[str]:
    if cluster is None:
        return each_cluster(cluster_reconcile)
    result = services.cluster_reconcile(
        backend=backend_named(cluster),
        cluster=selectors.cluster_named(cluster),
        launches_queued=launches_queued(cluster),
    )
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
