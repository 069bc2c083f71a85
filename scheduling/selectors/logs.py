"""Reads of a workload's container logs: from the cluster its objects run in, as long as they
exist (the portal deletes them when the workload ends, and their logs with them)."""

from collections.abc import Iterator
from datetime import datetime

from django.conf import settings
from django.core.exceptions import ValidationError

from portal import clock
from portal.errors import Conflict

from ..cluster import ClusterBackend
from ..cluster.manifests import workload_primary_object
from ..cluster.specs import LogLine
from ..models import Workload

TAIL_MAX = 10_000


def workload_log_lines(
    *,
    workload: Workload,
    backend: ClusterBackend,
    replica: int | None = None,
    tail: int | None = None,
    since: datetime | None = None,
    follow: bool = False,
) -> Iterator[LogLine]:
    """The log lines of a workload the caller already reached through `workload_get`, oldest
    first: of one replica or of all, written at or after `since`, the last `tail`. Followed,
    new lines come as they are written until its containers end, its objects are deleted or
    PORTAL_LOGS_FOLLOW_MAX_SECONDS pass. Refused (409) before it was launched and after its
    objects were deleted; a replica it does not have is a field error."""
    if replica is not None and replica >= workload.replicas:
        count = workload.replicas
        numbers = f"replicas: 0 to {count - 1}" if count > 1 else "replica: 0"
        raise ValidationError({"replica": [f"{workload.name} has {count} {numbers}."]})
    if workload.launched_at is None:
        when = "never started" if workload.is_final else "has not started yet"
        raise Conflict(f"{workload.name} {when}: it has no logs.", code="workload_not_started")
    if workload.is_final and workload.objects_deleted_at is not None:
        raise Conflict(
            f"{workload.name} ended and its containers were removed from the cluster, their "
            "logs with them.",
            code="logs_gone",
        )
    keep_following = None
    if follow:
        deadline = clock.monotonic() + settings.PORTAL_LOGS_FOLLOW_MAX_SECONDS

        def keep_following() -> bool:
            return clock.monotonic() < deadline

    return backend.logs(
        namespace=workload.project.namespace,
        name=workload.object_name,
        kind=workload_primary_object(kind=workload.kind)[1],
        replica=replica,
        tail=tail,
        since=since,
        keep_following=keep_following,
    )


def log_text(line: LogLine, *, replicas_shown: int) -> str:
    """A line as the API and the console show it: `[replica N] ` before it when the lines of
    more than one replica are shown together."""
    return f"[replica {line.replica}] {line.text}" if replicas_shown > 1 else line.text
