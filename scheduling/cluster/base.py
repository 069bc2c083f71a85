"""The one protocol every cluster backend speaks, and the errors it raises."""

from collections.abc import Mapping
from typing import Protocol

from .specs import NodeInventory, TaintSpec, WorkloadStatus


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

    def gpu_utilization(self, *, namespace: str, workload: str) -> float | None:
        """Mean GPU utilization (0-1) of the workload's pods lately; None when unknown."""
        ...

    def gpu_memory_used(self, *, namespace: str, workload: str) -> float | None:
        """The fraction (0-1) of its GPUs' memory the workload's pods use; None when
        unknown."""
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
