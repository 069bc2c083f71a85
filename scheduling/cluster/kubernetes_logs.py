"""A workload's container logs, from the pods' log API (`GET …/pods/{pod}/log`).

The workload's pods are listed by its label; each replica is read from one pod: a Job's by
completion index (the newest pod of an index, a retry after a failed one), a Deployment's in
order of creation, a notebook's Pod alone. Lines are asked with their timestamps, so that the
replicas' lines can be merged oldest first and `since` kept exactly (the API server's
`sinceTime` counts whole seconds); the timestamps are not part of the text.

Following opens one `follow=true` stream per pod, each read by a thread into one queue; the
caller's generator waits on the queue a second at a time and asks `keep_following()` between,
so it returns within a second of being told to stop however silent the pods are; a reading
thread stops at its next line, or at its read timeout if the pod is silent. A stream the read
timeout breaks (a pod silent that long) is opened again from its last line's time while the
follower stays; a stream the API server ends (the container ended) ends that replica.
"""

import queue
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import urllib3

from .base import ClusterError
from .manifests import CONTAINER_NAME, WORKLOAD_LABEL
from .specs import LogLine

COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
FOLLOW_WAIT_SECONDS = 1.0
_EARLIEST = datetime.min.replace(tzinfo=UTC)
_ENDED = object()
_NOT_STARTED = object()


def replica_pods(kind: str, pods: list[dict]) -> dict[int, str]:
    """Replica index -> the pod its log is read from."""
    ordered = sorted(
        pods, key=lambda p: (p["metadata"].get("creationTimestamp") or "", p["metadata"]["name"])
    )
    if kind != "Job":
        return {index: pod["metadata"]["name"] for index, pod in enumerate(ordered)}
    found: dict[int, str] = {}
    for pod in ordered:
        metadata = pod["metadata"]
        index = (metadata.get("labels") or {}).get(COMPLETION_INDEX) or (
            metadata.get("annotations") or {}
        ).get(COMPLETION_INDEX)
        if index is not None and index.isdigit():
            found[int(index)] = metadata["name"]
    return dict(sorted(found.items()))


def timestamp_parse(stamp: str) -> datetime:
    """An RFC 3339 time as the API server writes it before each line (nanoseconds cut to
    microseconds)."""
    stamp = stamp.removesuffix("Z")
    whole, _, fraction = stamp.partition(".")
    return datetime.fromisoformat(f"{whole}.{(fraction or '0')[:6]:0<6}").replace(tzinfo=UTC)


def log_line(raw: str, *, replica: int) -> LogLine:
    stamp, _, text = raw.partition(" ")
    try:
        return LogLine(at=timestamp_parse(stamp), replica=replica, text=text)
    except ValueError:  # no timestamp: keep the whole line
        return LogLine(at=_EARLIEST, replica=replica, text=raw)


def _query(*, tail: int | None, since: datetime | None, follow: bool) -> list[tuple[str, str]]:
    query = [("container", CONTAINER_NAME), ("timestamps", "true")]
    if tail is not None:
        query.append(("tailLines", str(tail)))
    if since is not None:
        query.append(("sinceTime", since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")))
    if follow:
        query.append(("follow", "true"))
    return query


def _raw_lines(response) -> Iterator[str]:
    """The lines of a (streamed) answer as they arrive: `read1` answers what has come, not a
    full buffer (the API server's streams are chunked; a test server's may not be)."""
    pending = b""
    while chunk := response.read1(4096):
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for raw in complete:
            yield raw.decode("utf-8", errors="replace").rstrip("\r")
    if pending:
        yield pending.decode("utf-8", errors="replace")


class PodLogs:
    """The `logs` of `KubernetesBackend`, which brings `_list` and `_response`."""

    def logs(
        self,
        *,
        namespace: str,
        name: str,
        kind: str,
        replica: int | None = None,
        tail: int | None = None,
        since: datetime | None = None,
        keep_following: Callable[[], bool] | None = None,
    ) -> Iterator[LogLine]:
        listed = self._list(
            f"/api/v1/namespaces/{namespace}/pods", label_selector=f"{WORKLOAD_LABEL}={name}"
        )
        pods = replica_pods(kind, listed)
        if replica is not None:
            pods = {replica: pods[replica]} if replica in pods else {}
        paths = {
            index: f"/api/v1/namespaces/{namespace}/pods/{pod}/log" for index, pod in pods.items()
        }
        if keep_following is not None:
            yield from self._followed(paths, tail=tail, since=since, keep_following=keep_following)
            return
        lines: list[LogLine] = []
        for index, path in paths.items():
            lines += self._read(path, replica=index, tail=tail, since=since, follow=False)
        lines.sort(key=lambda line: (line.at, line.replica))
        yield from lines[-tail:] if tail is not None else lines

    def _open(self, path: str, **query):
        """The answer of a pod's log; `_NOT_STARTED` while its container has not started
        (the API server answers 400), None when the pod is gone (404)."""
        try:
            return self._response("GET", path, query=_query(**query))
        except ClusterError as error:
            if error.retryable or error.status not in (400, 404):
                raise
            return _NOT_STARTED if error.status == 400 else None

    def _read(self, path: str, *, replica: int, since: datetime | None, **query) -> list[LogLine]:
        response = self._open(path, since=since, **query)
        if response is None or response is _NOT_STARTED:
            return []
        try:
            lines = [log_line(raw, replica=replica) for raw in _raw_lines(response)]
        except urllib3.exceptions.HTTPError as error:  # the answer broke off: the cluster's
            raise ClusterError(f"GET {path}: {error}", retryable=True) from error
        finally:
            response.release_conn()
        return [line for line in lines if since is None or line.at >= since]

    def _followed(
        self,
        paths: dict[int, str],
        *,
        tail: int | None,
        since: datetime | None,
        keep_following: Callable[[], bool],
    ) -> Iterator[LogLine]:
        arrived: queue.Queue = queue.Queue()
        stop = threading.Event()
        for index, path in paths.items():
            threading.Thread(
                target=self._follow_pod,
                kwargs={
                    "path": path,
                    "replica": index,
                    "tail": tail,
                    "since": since,
                    "arrived": arrived,
                    "stop": stop,
                },
                daemon=True,
                name=f"logs-{path}",
            ).start()
        following = len(paths)
        try:
            while following and keep_following():
                try:
                    item = arrived.get(timeout=FOLLOW_WAIT_SECONDS)
                except queue.Empty:
                    continue
                if item is _ENDED:
                    following -= 1
                elif isinstance(item, ClusterError):
                    raise item
                else:
                    yield item
        finally:
            stop.set()

    def _follow_pod(
        self,
        *,
        path: str,
        replica: int,
        tail: int | None,
        since: datetime | None,
        arrived: queue.Queue,
        stop: threading.Event,
    ) -> None:
        """Put one pod's lines in `arrived` as they come, then `_ENDED` (or the error)."""
        last: datetime | None = None
        try:
            while not stop.is_set():
                response = self._open(
                    path, tail=tail if last is None else None, since=last or since, follow=True
                )
                if response is None:
                    return  # the pod is gone
                if response is _NOT_STARTED:
                    stop.wait(FOLLOW_WAIT_SECONDS)
                    continue
                try:
                    for raw in _raw_lines(response):
                        if stop.is_set():  # the follower left: read no more
                            return
                        line = log_line(raw, replica=replica)
                        seen = last is not None and line.at <= last
                        if not seen and (since is None or line.at >= since):
                            arrived.put(line)
                            last = line.at
                    return  # the API server ended the stream: the container ended
                except urllib3.exceptions.HTTPError:  # the read timed out or broke: again
                    continue
                finally:
                    response.release_conn()
        except ClusterError as error:
            arrived.put(error)
        finally:
            arrived.put(_ENDED)
