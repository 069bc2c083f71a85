"""Every simulated cluster of a description file driven as one backend: what a caller that
knows no cluster (the settings' backend, tests) applies lands where the per-cluster backends
read it. A workload's objects go to the cluster of the nodes they are bound to; everything else
a namespace or the cluster holds (namespaces, quotas, priority classes) goes to every cluster."""

from collections.abc import Callable, Collection, Iterator, Mapping
from datetime import datetime

from .simulated import SimulatedBackend, affinity_nodes
from .specs import GpuReading, LogLine, NodeInventory, Phase, TaintSpec, WorkloadStatus


class SimulatedClusters:
    """`ClusterBackend` over one `SimulatedBackend` per cluster of a description."""

    def __init__(self, backends: Collection[SimulatedBackend]) -> None:
        self.backends = list(backends)
        self.by_node = {
            node.name: backend for backend in self.backends for node in backend.list_nodes()
        }

    def _of_nodes(self, nodes: Collection[str]) -> list[SimulatedBackend]:
        """The cluster of these nodes; every cluster when none is named."""
        owners = [self.by_node[node] for node in nodes if node in self.by_node]
        return owners[:1] or self.backends

    def list_nodes(self) -> list[NodeInventory]:
        return [node for backend in self.backends for node in backend.list_nodes()]

    def apply(self, manifest: dict) -> dict:
        nodes = affinity_nodes(manifest) if manifest["kind"] in WORKLOAD_KINDS else ()
        stored = [backend.apply(manifest) for backend in self._of_nodes(nodes)]
        return stored[0]  # the same in every cluster it went to

    def delete(self, *, api_version: str, kind: str, name: str, namespace: str | None) -> None:
        for backend in self.backends:
            backend.delete(api_version=api_version, kind=kind, name=name, namespace=namespace)

    def label_node(
        self, *, name: str, labels: dict[str, str], taints: tuple[TaintSpec, ...]
    ) -> None:
        for backend in self._of_nodes([name]):
            backend.label_node(name=name, labels=labels, taints=taints)

    def workload_statuses(
        self, *, namespace: str, workloads: Mapping[str, str]
    ) -> dict[str, WorkloadStatus]:
        found: dict[str, WorkloadStatus] = {}
        for backend in self.backends:
            statuses = backend.workload_statuses(namespace=namespace, workloads=workloads)
            for name, status in statuses.items():
                if name not in found or found[name].phase == Phase.MISSING:
                    found[name] = status
        return found

    def gpu_readings(
        self, *, workloads: Mapping[str, Collection[str]]
    ) -> dict[tuple[str, str], GpuReading]:
        readings: dict[tuple[str, str], GpuReading] = {}
        for backend in self.backends:
            readings.update(backend.gpu_readings(workloads=workloads))
        return readings

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
        for backend in self.backends:
            if backend.stored(namespace=namespace, name=name, kind=kind) is not None:
                yield from backend.logs(
                    namespace=namespace,
                    name=name,
                    kind=kind,
                    replica=replica,
                    tail=tail,
                    since=since,
                    keep_following=keep_following,
                )
                return

    # Failure injection, for tests and the demo.

    def node_fail(self, *, name: str) -> None:
        for backend in self._of_nodes([name]):
            backend.node_fail(name=name)

    def node_recover(self, *, name: str) -> None:
        for backend in self._of_nodes([name]):
            backend.node_recover(name=name)


WORKLOAD_KINDS = ("Job", "Deployment", "Pod")
