"""Where provisioning stands, and where it must happen: the clusters an organization may use
hold its projects' namespaces.

Every pool is open to every organization (none is dedicated to some); what an organization may
run on a GPU pool is what its organization quotas grant of the pool's class, and a grant may
cap a region at nothing (`QuotaGrant.region_limits`). So an organization may use a cluster with
a CPU pool (CPU-only work goes anywhere) or with a GPU pool of a class it is granted, in a
region its grant does not cap at 0. A workload's region pin only narrows its own placement."""

from collections.abc import Iterable

from django.db.models import Count

from tenants.models import Project
from tenants.permissions import Action, Caller, authorize

from ..models import Cluster, NodePool, ProvisioningRecord, QuotaGrant


def _may_use(*, pool_class, region: str, grants: Iterable[tuple]) -> bool:
    """Whether work under these (GPU class id, region caps) grants may run on a pool of this
    class (None: a CPU pool) in this region."""
    if pool_class is None:
        return True
    return any(gpu_class == pool_class and caps.get(region, 1) > 0 for gpu_class, caps in grants)


def _organization_grants(organization_id) -> list[tuple]:
    return list(
        QuotaGrant.objects.filter(
            organization_id=organization_id, project__isnull=True, limit__gt=0
        )
        .order_by()
        .values_list("gpu_class_id", "region_limits")
    )


def organization_clusters(*, organization_id) -> list[Cluster]:
    """The clusters the organization may use (see the module), by name."""
    grants = _organization_grants(organization_id)
    usable = {
        cluster_id
        for cluster_id, region, pool_class in NodePool.objects.order_by().values_list(
            "cluster_id", "cluster__region", "gpu_class_id"
        )
        if _may_use(pool_class=pool_class, region=region, grants=grants)
    }
    return list(Cluster.objects.filter(pk__in=usable).order_by("name"))


def organization_may_use(*, organization_id, cluster: Cluster) -> bool:
    """Whether the organization may use the cluster (see the module)."""
    grants = _organization_grants(organization_id)
    return any(
        _may_use(pool_class=pool_class, region=cluster.region, grants=grants)
        for pool_class in cluster.pools.values_list("gpu_class_id", flat=True)
    )


def cluster_organizations(*, cluster: Cluster | None) -> set | None:
    """The ids of the organizations that may use the cluster; None: every organization (the
    cluster has a CPU pool, or none is named: the settings' backend, which drives them all)."""
    if cluster is None:
        return None
    classes = set(cluster.pools.values_list("gpu_class_id", flat=True))
    if None in classes:
        return None
    grants = QuotaGrant.objects.filter(
        project__isnull=True, limit__gt=0, gpu_class_id__in=classes
    ).values_list("organization_id", "region_limits")
    return {organization for organization, caps in grants if caps.get(cluster.region, 1) > 0}


def project_provisioning(*, caller: Caller, project: Project) -> list[ProvisioningRecord]:
    """Where the provisioning of the project's namespace stands in each cluster: its records,
    and (unsaved, pending) one for each cluster its organization may use that has none yet."""
    authorize(caller=caller, organization=project.organization, action=Action.WORKLOAD_VIEW)
    records = list(
        ProvisioningRecord.objects.filter(project=project)
        .select_related("cluster")
        .order_by("cluster__name")
    )
    if project.deleted_at is None:
        known = {record.cluster_id for record in records}
        records += [
            ProvisioningRecord(project=project, cluster=cluster)
            for cluster in organization_clusters(organization_id=project.organization_id)
            if cluster.pk not in known
        ]
    return sorted(records, key=lambda record: record.where)


def provisioning_counts() -> list[tuple[str, str, str, int]]:
    """How many provisioning records each cluster has in each state, by scope: (cluster or
    "", scope, state, count), for /metrics."""
    return [
        (cluster or "", scope, state, count)
        for cluster, scope, state, count in ProvisioningRecord.objects.values_list(
            "cluster__name", "scope", "state"
        )
        .annotate(count=Count("pk"))
        .order_by("cluster__name", "scope", "state")
    ]
