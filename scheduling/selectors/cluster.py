"""Operators' reads of the whole cluster, every tenant's work in it: each pool node by node and
GPU by GPU, the queue across tenants, and the running and waiting GPU work the insights judge."""

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import F, OuterRef, Q, QuerySet, Subquery

from tenants.permissions import Caller, require_operator

from .. import engine
from ..engine.model import MILLI_PER_GPU
from ..models import Cluster, Node, Placement, Workload
from ..models.inventory import NOTICE_MAX_SECONDS
from ..specs_from_models import engine_nodes

# Work that asks for a GPU: whole ones, a share, or MIG instances.
NEEDS_GPU = Q(gpus__gt=0) | Q(gpu_milli__gt=0) | Q(mig_count__gt=0)


@dataclass(frozen=True)
class GpuCell:
    """One GPU of a node, or one MIG instance of it, as operators see it: who holds it (None:
    free) and how much."""

    tenant: str | None = None
    tier: str = ""
    milli: int = 0


@dataclass(frozen=True)
class MigUse:
    """One MIG profile of a node: its instances, each held or free, in layout order."""

    profile: str
    instances: list[GpuCell]

    @property
    def used(self) -> int:
        return sum(1 for cell in self.instances if cell.tenant)


@dataclass(frozen=True)
class PoolOverview:
    capacity: engine.PoolCapacity
    # Each node of the pool with its whole GPUs, in index order.
    nodes: list[tuple[Node, list[GpuCell]]]
    # The MIG instances of each node that has any (by node id), profile by profile.
    mig: dict[int, list[MigUse]] = field(default_factory=dict)

    @property
    def sentence(self) -> str:
        """Free against schedulable in words, for the largest size a node of the pool could
        hold that the idle GPUs would but their fragments do not: "12 GPUs idle, but only one
        4-GPU job fits". Idle GPUs are those of uncordoned nodes (no request may use a
        cordoned node's); those of cordoned nodes are named apart. A CPU pool's is what it is
        for."""
        if not self.capacity.gpu_class:
            return f"A CPU pool of {len(self.nodes)} nodes without GPUs, for CPU-only work"
        idle = self.capacity.gpus_idle_schedulable
        cordoned = self.capacity.gpus_idle - idle
        aside = f" ({cordoned} more idle on cordoned nodes)" if cordoned else ""
        largest = max((node.gpu_count for node, _ in self.nodes), default=0)
        for size in sorted(self.capacity.schedulable, reverse=True):
            if size > largest:  # no node of the pool could ever hold it: not fragmentation
                continue
            fits, would = self.capacity.schedulable[size], idle // size
            if would > fits:
                jobs = {0: "no", 1: "only one"}.get(fits, f"only {fits}")
                verb = "fit" if fits > 1 else "fits"
                return (
                    f"{idle} GPUs idle{aside}, but {jobs} {size}-GPU job{'s' * (fits > 1)} {verb}"
                )
        return f"{idle} GPUs idle{aside}, every one usable by the largest jobs"

    @property
    def mig_totals(self) -> list[tuple[str, int, int]]:
        """(profile, instances in use, instances) over the pool's nodes."""
        totals: dict[str, tuple[int, int]] = {}
        for uses in self.mig.values():
            for use in uses:
                used, count = totals.get(use.profile, (0, 0))
                totals[use.profile] = (used + use.used, count + len(use.instances))
        return [(profile, used, count) for profile, (used, count) in sorted(totals.items())]


def cluster_overview(*, caller: Caller) -> list[PoolOverview]:
    """Operators: every pool, cluster by cluster, with its free and schedulable capacity by
    request size (the engine's view of the ready nodes), its nodes GPU by GPU and MIG instance
    by instance, with who holds each."""
    require_operator(caller)
    nodes = list(
        Node.objects.select_related("pool__gpu_class", "pool__cluster").order_by(
            "pool__name", "name"
        )
    )
    placements = list(
        Placement.objects.filter(ended_at__isnull=True).select_related(
            "node", "workload__project__organization", "workload__tier"
        )
    )
    held: dict[tuple[int, int], GpuCell] = {}
    # The MIG instances each node's placements hold, per profile, in placement order.
    instances_held: dict[tuple[int, str], list[GpuCell]] = {}
    for placement in sorted(placements, key=lambda p: (p.started_at, p.pk)):
        workload = placement.workload
        cell = GpuCell(
            tenant=workload.project.organization.slug,
            tier=workload.tier.name,
            milli=placement.gpu_milli or MILLI_PER_GPU,
        )
        for index in placement.gpu_indices:
            held[(placement.node_id, index)] = cell
        if placement.mig_profile and placement.mig_count:
            instances_held.setdefault((placement.node_id, placement.mig_profile), []).extend(
                [cell] * placement.mig_count
            )
    capacities = engine.pool_capacity(
        nodes=engine_nodes([node for node in nodes if node.ready], placements)
    )
    mig = {
        node.pk: [
            MigUse(
                profile=profile,
                instances=(instances_held.get((node.pk, profile), []) + [GpuCell()] * count)[
                    : max(count, len(instances_held.get((node.pk, profile), [])))
                ],
            )
            for profile, count in sorted(node.mig_layout.items())
        ]
        for node in nodes
        if node.mig_layout
    }
    return [
        PoolOverview(
            capacity=capacity,
            nodes=[
                (node, [held.get((node.pk, index), GpuCell()) for index in range(node.gpu_count)])
                for node in nodes
                if node.pool.name == capacity.pool
            ],
            mig={
                node.pk: mig[node.pk]
                for node in nodes
                if node.pool.name == capacity.pool and node.pk in mig
            },
        )
        for capacity in sorted(capacities, key=lambda c: (c.cluster, c.pool, c.gpu_class))
    ]


def queue_across_tenants(*, caller: Caller) -> QuerySet[Workload]:
    """Operators: every waiting workload of every tenant, in the engine's queue order, with
    why it waits."""
    require_operator(caller)
    return (
        Workload.objects.filter(state=Workload.State.PENDING)
        .select_related("project__organization", "tier", "gpu_class")
        .order_by(F("queue_position").asc(nulls_last=True), "submitted_at")
    )


def gpu_workloads_waiting(*, caller: Caller) -> list[Workload]:
    """Operators: every tenant's waiting work that asks for a GPU."""
    require_operator(caller)
    return list(
        Workload.objects.filter(NEEDS_GPU, state=Workload.State.PENDING).select_related(
            "project__organization"
        )
    )


def gpu_workloads_seen(*, caller: Caller, since: datetime) -> list[Workload]:
    """Operators: every tenant's running GPU work that monitoring has read since ``since``,
    the least busy first, each with the name of the cluster it runs in (``cluster_name``;
    None while it is placed nowhere, as in a cluster that stopped answering)."""
    require_operator(caller)
    placed_in = Placement.objects.filter(workload=OuterRef("pk"), ended_at__isnull=True)
    return list(
        Workload.objects.filter(
            NEEDS_GPU,
            state=Workload.State.RUNNING,
            gpu_utilization__isnull=False,
            gpu_seen_at__gte=since,
        )
        .annotate(cluster_name=Subquery(placed_in.values("node__pool__cluster__name")[:1]))
        .select_related("project__organization")
        .order_by("gpu_utilization", "project__organization__slug", "project__slug", "name")
    )


def terminating_placements(*, now: datetime) -> list[Placement]:
    """The placements of evicted work whose pods still terminate: ended by the eviction of
    work that was running, less than its notice ago. Their GPUs are not free before the
    notice has passed (the pods' terminationGracePeriodSeconds), so the cycle counts them as
    held, as the cluster does."""
    recent = (
        Placement.objects.filter(
            ended_at__gt=now - timedelta(seconds=NOTICE_MAX_SECONDS),
            running_at__isnull=False,
            workload__eviction_log__at=F("ended_at"),
        )
        .annotate(notice_seconds=F("workload__eviction_log__notice_seconds"))
        .select_related("node")
    )
    return [p for p in recent if p.ended_at + timedelta(seconds=p.notice_seconds) > now]


def cluster_names() -> list[str]:
    """Every cluster's name: the worker runs each cluster's passes apart."""
    return list(Cluster.objects.values_list("name", flat=True))


def cluster_states() -> list[Cluster]:
    """Every cluster, with whether it answers, for operators and /metrics."""
    return list(Cluster.objects.order_by("name"))


def region_list() -> list[str]:
    """The regions of the clusters, each once: what a workload may be pinned to."""
    return list(Cluster.objects.order_by("region").values_list("region", flat=True).distinct())


def cluster_named(name: str) -> Cluster | None:
    """The cluster of a task's argument; None for "" (no cluster known: the settings' backend)."""
    return Cluster.objects.filter(name=name).first() if name else None


def workload_clusters(workload_ids) -> dict[str, str]:
    """The name of the cluster each workload was placed in (its latest placement's), by id;
    a workload never placed is absent. For the worker, which routes each workload's tasks to
    its cluster."""
    rows = (
        Placement.objects.filter(workload_id__in=list(workload_ids))
        .order_by("workload_id", "started_at")
        .values_list("workload_id", "node__pool__cluster__name")
    )
    return {str(workload_id): name for workload_id, name in rows}
