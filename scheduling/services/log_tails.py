"""Keeping the tail of a workload's logs when its cluster objects are deleted: the cluster
deletes the containers' logs with them, so the last lines of each replica's log are read just
before and kept in the database, where the logs endpoint serves them afterwards.

Keeping them must never stop a teardown: a cluster that fails to answer is recorded (the
replica keeps no lines, and the reason) and the objects are deleted all the same."""

from collections.abc import Sequence

from django.conf import settings

from portal import clock

from ..cluster import ClusterBackend, ClusterError
from ..cluster.manifests import workload_primary_object
from ..cluster.specs import LogLine
from ..models import Workload, WorkloadLogTail


def log_tail_bounded(
    lines: Sequence[LogLine], *, lines_max: int, bytes_max: int
) -> tuple[list[LogLine], bool]:
    """The last lines that fit both bounds (a line's bytes: its UTF-8 text and its newline),
    and whether anything was left out. A last line longer than the bytes alone keeps its end."""
    kept: list[LogLine] = []
    size = 0
    for line in reversed(lines[-lines_max:] if lines_max else []):
        size += len(line.text.encode()) + 1
        if size > bytes_max:
            break
        kept.append(line)
    if not kept and lines and lines_max and bytes_max > 1:
        last = lines[-1]
        end = last.text.encode()[-(bytes_max - 1) :].decode(errors="ignore")
        return [LogLine(at=last.at, replica=last.replica, text=end)], True
    kept.reverse()
    return kept, len(kept) < len(lines)


def workload_log_tails_keep(*, workload: Workload, backend: ClusterBackend) -> None:
    """Read and keep the last lines of each replica's log (PORTAL_LOGS_KEPT_LINES and
    PORTAL_LOGS_KEPT_BYTES at most), replacing what an earlier teardown kept. One more line
    than kept is asked, to know whether the log was longer. After a cluster error the other
    replicas are not asked (each would wait out the same retries): they record it too."""
    lines_max = settings.PORTAL_LOGS_KEPT_LINES
    kind = workload_primary_object(kind=workload.kind)[1]
    now = clock.now()
    failure = ""
    tails = []
    for replica in range(workload.replicas):
        tail = WorkloadLogTail(workload=workload, replica=replica, captured_at=now)
        tails.append(tail)
        if not failure:
            try:
                read = list(
                    backend.logs(
                        namespace=workload.project.namespace,
                        name=workload.object_name,
                        kind=kind,
                        replica=replica,
                        tail=lines_max + 1,
                    )
                )
            except ClusterError as error:
                failure = f"the cluster did not answer when they were to be kept: {error}"[:500]
            else:
                kept, tail.truncated = log_tail_bounded(
                    read, lines_max=lines_max, bytes_max=settings.PORTAL_LOGS_KEPT_BYTES
                )
                tail.lines = [[line.at.isoformat(), line.text] for line in kept]
        tail.failure = failure
    WorkloadLogTail.objects.bulk_create(
        tails,
        update_conflicts=True,
        unique_fields=["workload", "replica"],
        update_fields=["lines", "truncated", "captured_at", "failure"],
    )
