"""Reads of a workload's container logs: from the cluster its objects run in, as long as they
exist; after the portal deleted them (the cluster deletes their logs with them), the tail of
each replica's log kept at that moment."""

from collections.abc import Iterator
from dataclasses import dataclass
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


@dataclass(frozen=True)
class KeptTail:
    """Where lines served from the kept tail come from: when it was kept, and whether a
    replica's log was longer than what was kept (its beginning is lost)."""

    captured_at: datetime
    truncated: bool


@dataclass(frozen=True)
class WorkloadLogs:
    lines: Iterator[LogLine]
    kept: KeptTail | None  # None: read from the cluster


def workload_logs(
    *,
    workload: Workload,
    backend: ClusterBackend,
    replica: int | None = None,
    tail: int | None = None,
    since: datetime | None = None,
    follow: bool = False,
) -> WorkloadLogs:
    """The log lines of a workload the caller already reached through `workload_get`, oldest
    first: of one replica or of all, written at or after `since`, the last `tail`. Followed,
    new lines come as they are written until its containers end, its objects are deleted or
    PORTAL_LOGS_FOLLOW_MAX_SECONDS pass. Once it ended and its objects were deleted, the tail
    kept then (following just ends). Refused (409) before it was launched, and after its
    objects were deleted when nothing was kept; a replica it does not have is a field
    error."""
    if replica is not None and replica >= workload.replicas:
        count = workload.replicas
        numbers = f"replicas: 0 to {count - 1}" if count > 1 else "replica: 0"
        raise ValidationError({"replica": [f"{workload.name} has {count} {numbers}."]})
    if workload.launched_at is None:
        when = "never started" if workload.is_final else "has not started yet"
        raise Conflict(f"{workload.name} {when}: it has no logs.", code="workload_not_started")
    if workload.is_final and workload.objects_deleted_at is not None:
        return _kept_logs(workload, replica=replica, tail=tail, since=since)
    keep_following = None
    if follow:
        deadline = clock.monotonic() + settings.PORTAL_LOGS_FOLLOW_MAX_SECONDS

        def keep_following() -> bool:
            return clock.monotonic() < deadline

    lines = backend.logs(
        namespace=workload.project.namespace,
        name=workload.object_name,
        kind=workload_primary_object(kind=workload.kind)[1],
        replica=replica,
        tail=tail,
        since=since,
        keep_following=keep_following,
    )
    return WorkloadLogs(lines=lines, kept=None)


def _kept_logs(
    workload: Workload, *, replica: int | None, tail: int | None, since: datetime | None
) -> WorkloadLogs:
    """The lines kept of its replicas' logs when its objects were deleted, filtered as the
    cluster's would be. Gone (409) when nothing was kept: it was torn down before tails were
    kept, or the cluster failed to answer then (the reason is told)."""
    tails = [t for t in workload.log_tails.all() if replica is None or t.replica == replica]
    if not tails or all(t.failure for t in tails):
        reason = tails[0].failure if tails else "nothing of them was kept."
        raise Conflict(
            f"{workload.name} ended and its containers were removed from the cluster, their "
            f"logs with them; {reason}",
            code="logs_gone",
        )
    lines = [
        LogLine(at=datetime.fromisoformat(at), replica=kept.replica, text=text)
        for kept in tails
        for at, text in kept.lines
    ]
    lines = sorted(
        (line for line in lines if since is None or line.at >= since),
        key=lambda line: (line.at, line.replica),
    )
    return WorkloadLogs(
        lines=iter(lines[-tail:] if tail is not None else lines),
        kept=KeptTail(
            captured_at=max(t.captured_at for t in tails),
            truncated=any(t.truncated for t in tails),
        ),
    )


def log_text(line: LogLine, *, replicas_shown: int) -> str:
    """A line as the API and the console show it: `[replica N] ` before it when the lines of
    more than one replica are shown together."""
    return f"[replica {line.replica}] {line.text}" if replicas_shown > 1 else line.text
