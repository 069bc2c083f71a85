"""The one protocol every cluster backend speaks, and the errors it raises."""

from collections.abc import Callable, Collection, Iterator, Mapping
from datetime import datetime
from typing import Protocol

from .specs import GpuReading, LogLine, NodeInventory, TaintSpec, WorkloadStatus


class ClusterError(Exception):
    """A cluster call failed for good (after retries): the reason is shown to users and
    operators."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False):
        super().__init__(message)
        self.status = status
        self.retryable = retryable


class ClusterBackend(Protocol):
    def list_nodes(self) -> list[NodeInventory]: ...

    def apply(self, manifest: dict) -> dict:
        """Create the object, or bring the existing one to the manifest; return it."""
        ...

    def delete(self, *, api_version: str, kind: str, name: str, namespace: str | None) -> None:
        """Delete the object; one that is already gone is a success."""
        ...

    def label_node(
        self, *, name: str, labels: dict[str, str], taints: tuple[TaintSpec, ...]
    ) -> None: ...

    def workload_statuses(
        self, *, namespace: str, workloads: Mapping[str, str]
    ) -> dict[str, WorkloadStatus]:
        """The status of each named workload of the namespace (name -> kind of its
        status-carrying object, a Job, Deployment or Pod): a few calls, however many."""
        ...

    def gpu_readings(
        self, *, workloads: Mapping[str, Collection[str]]
    ) -> dict[tuple[str, str], GpuReading]:
        """Mean GPU utilization and the share of GPU memory used of each named workload's pods
        (namespace -> workload names), keyed (namespace, workload): a few calls however many;
        a workload monitoring does not see is absent."""
        ...

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
        """The lines the named workload's containers wrote (kind: of its status-carrying
        object, a Job, Deployment or Pod), oldest first: of one replica or of all, written at
        or after `since`, the last `tail` of them. With `keep_following`, lines written later
        follow as they are written, until the containers end, the objects are gone, or
        `keep_following()` answers False (asked at least every few seconds). Nothing when the
        workload has no objects (any more)."""
        ...


def manifests_delete(backend: ClusterBackend, manifests: list[dict]) -> None:
    """Delete the objects these manifests describe, in order (already gone is fine)."""
    for manifest in manifests:
        metadata = manifest["metadata"]
        backend.delete(
            api_version=manifest["apiVersion"],
            kind=manifest["kind"],
            name=metadata["name"],
            namespace=metadata.get("namespace"),
        )
