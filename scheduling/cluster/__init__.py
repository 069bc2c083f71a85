"""Cluster backends: `simulated` (the default) or `kubernetes`, chosen by PORTAL_CLUSTER."""

from pathlib import Path

from django.conf import settings

from .base import ClusterBackend, ClusterError, manifests_delete


def get_backend() -> ClusterBackend:
    if settings.PORTAL_CLUSTER == "kubernetes":
        from .kubernetes import KubernetesBackend

        return KubernetesBackend.from_environment(prometheus_url=settings.PORTAL_PROMETHEUS_URL)
    from .simulated import SimulatedBackend

    return SimulatedBackend(
        description_path=Path(settings.PORTAL_SIMULATED_CLUSTER),
        latency_seconds=settings.PORTAL_SIMULATED_LATENCY_SECONDS,
    )


__all__ = ["ClusterBackend", "ClusterError", "get_backend", "manifests_delete"]
