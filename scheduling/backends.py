"""The cluster backend the app drives, as the settings choose it. The backends of
`scheduling/cluster/` import neither the app nor the kernel: here they get their configuration,
the portal's clock, the Prometheus client and the simulator's storage (the database, so that
the web process and the workers see the same simulated cluster)."""

from collections.abc import Collection, Mapping
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.db import transaction

from portal import clock
from portal.prometheus import PrometheusClient

from .cluster import ClusterBackend
from .cluster.simulated import SimulatedBackend, StoredNode, StoredObject
from .cluster.specs import TaintSpec
from .models import SimulatedNodeState, SimulatedObject


def get_backend() -> ClusterBackend:
    if settings.PORTAL_CLUSTER == "kubernetes":
        from .cluster.kubernetes import KubernetesBackend

        url = settings.PORTAL_PROMETHEUS_URL
        return KubernetesBackend.from_environment(
            metrics=PrometheusClient(url=url) if url else None
        )
    return simulated_backend(
        description_path=Path(settings.PORTAL_SIMULATED_CLUSTER),
        latency_seconds=settings.PORTAL_SIMULATED_LATENCY_SECONDS,
    )


def simulated_backend(*, description_path: Path, latency_seconds: float = 0.0) -> SimulatedBackend:
    """The simulated cluster of this description file, on the portal's clock and database."""
    return SimulatedBackend(
        description_path=description_path,
        store=DatabaseSimulatorStore(),
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
    """The simulator's `SimulatorStore`: SimulatedObject and SimulatedNodeState rows."""

    def objects(
        self,
        *,
        namespaces: Collection[str],
        names: Collection[str],
        kinds: Collection[str] | None = None,
    ) -> list[StoredObject]:
        found = SimulatedObject.objects.filter(namespace__in=namespaces, name__in=names)
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
        with transaction.atomic():
            stored, created = SimulatedObject.objects.select_for_update().get_or_create(
                kind=kind,
                namespace=namespace,
                name=name,
                defaults={
                    "api_version": api_version,
                    "manifest": manifest,
                    "created_at": created_at,
                },
            )
            if not created and stored.manifest != manifest:
                stored.manifest = manifest
                stored.save(update_fields=["manifest"])
        return stored.manifest

    def object_delete(self, *, kind: str, namespace: str, name: str) -> None:
        SimulatedObject.objects.filter(kind=kind, namespace=namespace, name=name).delete()

    def objects_of_kinds(self, *, kinds: Collection[str]) -> list[StoredObject]:
        return [_stored(row) for row in SimulatedObject.objects.filter(kind__in=kinds)]

    def node_states(self) -> dict[str, StoredNode]:
        return {
            row.name: StoredNode(
                name=row.name,
                labels=row.labels,
                taints=tuple(TaintSpec(**taint) for taint in row.taints),
                failed=row.failed,
            )
            for row in SimulatedNodeState.objects.all()
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
            name=name, defaults={key: value for key, value in changes.items() if value is not None}
        )
