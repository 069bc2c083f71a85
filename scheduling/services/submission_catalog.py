"""What every submission is checked against: its priority tiers, the clusters' catalog (GPU
classes, topology levels, regions, node shapes) and the organization's quotas, read once per
submission however many workloads it holds.

The catalog and the quotas come from the shared cache (Django's, Redis in production: every
web worker's) for PORTAL_SUBMISSION_CATALOG_SECONDS: a change to them reaches submissions
within that bound, and what a stale copy lets through, the cycle holds with its reason. The
tiers are read each time (a workload refers to its tier's row), and so is everything about
the caller: the token, the membership and the role are never cached."""

from collections.abc import Collection
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache

from tenants.models import Project

from ..models import Cluster, GpuClass, Node, NodePool, PriorityTier
from ..selectors import quota_grants_to_come
from ..specs_from_models import engine_quotas, node_shapes, shape_tolerations, topology_levels

CLUSTER_KEY = "scheduling:submission:cluster"
QUOTAS_KEY = "scheduling:submission:quotas"


@dataclass(frozen=True)
class ClusterCatalog:
    mig_profiles: dict[str, list[str]]  # GPU class name -> the MIG profiles it offers
    topology_levels: tuple[str, ...]
    regions: tuple[str, ...]  # the clusters' regions, that a workload may be pinned to
    node_shapes: tuple
    tolerations: tuple  # what GPU work tolerates: the GPU pools' taints

    @classmethod
    def read(cls) -> "ClusterCatalog":
        shapes = node_shapes(Node.objects.filter(ready=True))
        return cls(
            mig_profiles=dict(GpuClass.objects.order_by().values_list("name", "mig_profiles")),
            topology_levels=tuple(topology_levels(NodePool.objects.order_by("name"))),
            regions=tuple(
                Cluster.objects.order_by("region").values_list("region", flat=True).distinct()
            ),
            node_shapes=shapes,
            tolerations=shape_tolerations(shapes),
        )


@dataclass(frozen=True)
class SubmissionCatalog:
    tiers: dict[str, PriorityTier]
    cluster: ClusterCatalog
    quotas: tuple  # the organization's, with the approved increases still to come

    @classmethod
    def load(cls, *, project: Project, tiers: Collection[str]) -> "SubmissionCatalog":
        seconds = settings.PORTAL_SUBMISSION_CATALOG_SECONDS
        quotas_key = f"{QUOTAS_KEY}:{project.organization_id}"
        cached = cache.get_many([CLUSTER_KEY, quotas_key]) if seconds else {}
        read = {}
        if CLUSTER_KEY not in cached:
            read[CLUSTER_KEY] = ClusterCatalog.read()
        if quotas_key not in cached:
            # A request within a grant as an approved increase will make it may wait for it.
            grants = quota_grants_to_come(organization=project.organization)
            read[quotas_key] = engine_quotas(grants)
        if seconds and read:
            cache.set_many(read, seconds)
        found = {**cached, **read}
        return cls(
            tiers=PriorityTier.objects.in_bulk(set(tiers), field_name="name"),
            cluster=found[CLUSTER_KEY],
            quotas=found[quotas_key],
        )
