"""The cluster backends the app drives: one per `Cluster` (`backend_for`), and the one the
settings alone choose (`get_backend`, for callers that know no cluster: a deployment of one
cluster, tests). The backends of `scheduling/cluster/` import neither the app nor the kernel:
here they get their configuration, the portal's clock, the Prometheus client and the
simulator's storage (the database, so that the web process and the workers see the same
simulated cluster)."""

import os
from collections.abc import Collection, Mapping
from datetime import datetime
from pathlib import Path

from django.conf import settings

from portal import clock
from portal.prometheus import PrometheusClient

from .cluster import ClusterBackend
from .cluster.description import DEFAULT_CLUSTER, cluster_description_load
from .cluster.simulated import SimulatedBackend, StoredNode, StoredObject
from .cluster.simulated_clusters import SimulatedClusters
from .cluster.specs import TaintSpec
from .models import Cluster, SimulatedClusterState, SimulatedNodeState, SimulatedObject


def get_backend() -> ClusterBackend:
    """The backend of the settings: the process's Kubernetes configuration, or every cluster of
    the simulated description file as one."""
    if settings.PORTAL_CLUSTER == "kubernetes":
        return _kubernetes_backend(config_file=None)
    return simulated_backend(
        description_path=Path(settings.PORTAL_SIMULATED_CLUSTER),
        latency_seconds=settings.PORTAL_SIMULATED_LATENCY_SECONDS,
    )


def backend_for(cluster: Cluster) -> ClusterBackend:
    """The backend of one cluster: its kubeconfig (or the in-cluster service account), or its
    part of its simulated description file."""
    if cluster.backend == Cluster.Backend.KUBERNETES:
        return _kubernetes_backend(config_file=kubeconfig_file(cluster.kubeconfig))
    return simulated_backend(
        description_path=Path(cluster.simulated_path or settings.PORTAL_SIMULATED_CLUSTER),
        cluster=cluster.name,
        latency_seconds=settings.PORTAL_SIMULATED_LATENCY_SECONDS,
    )


def backend_named(name: str) -> ClusterBackend:
    """The backend of the cluster of this name (a task's argument, a SimulatedNodeState row's
    cluster); the settings' when no cluster has that name ("": none was known)."""
    cluster = Cluster.objects.filter(name=name).first() if name else None
    return backend_for(cluster) if cluster is not None else get_backend()


def workload_backend(workload_id) -> ClusterBackend:
    """The backend of the cluster the workload was placed in (the settings' if never placed)."""
    from .selectors import workload_clusters

    return backend_named(workload_clusters([workload_id]).get(str(workload_id), ""))


def kubeconfig_file(reference: str) -> str | None:
    """The kubeconfig file a cluster's reference names (`env:NAME`: the file named by that
    environment variable); None for an empty reference: the in-cluster configuration."""
    if not reference:
        return None
    if reference.startswith("env:"):
        variable = reference.removeprefix("env:")
        if not os.environ.get(variable):
            raise ValueError(f"The environment variable {variable} naming a kubeconfig is unset.")
        return os.environ[variable]
    return reference


def _kubernetes_backend(*, config_file: str | None) -> ClusterBackend:
    from .cluster.kubernetes import KubernetesBackend

    url = settings.PORTAL_PROMETHEUS_URL
    return KubernetesBackend.from_environment(
        config_file=config_file, metrics=PrometheusClient(url=url) if url else None
    )


def simulated_backend(
    *, description_path: Path, cluster: str | None = None, latency_seconds: float = 0.0
) -> SimulatedBackend | SimulatedClusters:
    """The named simulated cluster of this description file, or all of its clusters driven as
    one (None), on the portal's clock and database."""
    if cluster is None:
        return SimulatedClusters(
            simulated_backend(
                description_path=description_path,
                cluster=section.name,
                latency_seconds=latency_seconds,
            )
            for section in cluster_description_load(description_path).clusters
        )
    return SimulatedBackend(
        description_path=description_path,
        cluster=cluster,
        store=DatabaseSimulatorStore(cluster=cluster),
        now=clock.now,
        latency_seconds=latency_seconds,
    )


def _stored(row: SimulatedObject) -> StoredObject:
    return StoredObject(
        kind=row.kind,
        namespace=row.namespace,
        name=row.name,
        manifest=row.manifest,
        created_at=row.created_at,
    )


class DatabaseSimulatorStore:
    """The simulator's `SimulatorStore`: SimulatedObject and SimulatedNodeState rows of one
    cluster (by default the one of a description file without `clusters:`)."""

    def __init__(self, *, cluster: str = DEFAULT_CLUSTER) -> None:
        self.cluster = cluster

    def objects(
        self,
        *,
        namespaces: Collection[str],
        names: Collection[str],
        kinds: Collection[str] | None = None,
    ) -> list[StoredObject]:
        found = SimulatedObject.objects.filter(
            cluster=self.cluster, namespace__in=namespaces, name__in=names
        )
        if kinds is not None:
            found = found.filter(kind__in=kinds)
        return [_stored(row) for row in found]

    def object_put(
        self,
        *,
        api_version: str,
        kind: str,
        namespace: str,
        name: str,
        manifest: dict,
        created_at: datetime,
    ) -> dict:
        # One statement (INSERT ... ON CONFLICT DO UPDATE): an existing object takes the
        # manifest and keeps its creation time; concurrent puts of one object serialize on it.
        SimulatedObject.objects.bulk_create(
            [
                SimulatedObject(
                    cluster=self.cluster,
                    api_version=api_version,
                    kind=kind,
                    namespace=namespace,
                    name=name,
                    manifest=manifest,
                    created_at=created_at,
                )
            ],
            update_conflicts=True,
            unique_fields=["cluster", "kind", "namespace", "name"],
            update_fields=["manifest"],
        )
        return manifest

    def object_delete(self, *, kind: str, namespace: str, name: str) -> None:
        SimulatedObject.objects.filter(
            cluster=self.cluster, kind=kind, namespace=namespace, name=name
        ).delete()

    def objects_of_kinds(
        self, *, kinds: Collection[str], terminating: bool = False
    ) -> list[StoredObject]:
        found = SimulatedObject.objects.filter(cluster=self.cluster, kind__in=kinds)
        if terminating:
            found = found.filter(manifest__metadata__has_key="deletionTimestamp")
        return [_stored(row) for row in found]

    def node_states(self, *, names: Collection[str] | None = None) -> dict[str, StoredNode]:
        found = SimulatedNodeState.objects.filter(cluster=self.cluster)
        if names is not None:
            found = found.filter(name__in=names)
        return {
            row.name: StoredNode(
                name=row.name,
                labels=row.labels,
                taints=tuple(TaintSpec(**taint) for taint in row.taints),
                failed=row.failed,
            )
            for row in found
        }

    def node_state_update(
        self,
        *,
        name: str,
        labels: Mapping[str, str] | None = None,
        taints: tuple[TaintSpec, ...] | None = None,
        failed: bool | None = None,
    ) -> None:
        changes = {
            "labels": dict(labels) if labels is not None else None,
            "taints": [taint.as_dict() for taint in taints] if taints is not None else None,
            "failed": failed,
        }
        SimulatedNodeState.objects.update_or_create(
            cluster=self.cluster,
            name=name,
            defaults={key: value for key, value in changes.items() if value is not None},
        )

    def answering(self) -> bool:
        return not SimulatedClusterState.objects.filter(
            cluster=self.cluster, answering=False
        ).exists()
