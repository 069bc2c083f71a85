"""Conversions from the database to the plain data of the engine and of the cluster backends.

`scheduling/services/` is the only caller: it loads rows, converts them here, and hands the
result to the engine (`scheduling.engine`) or to a backend (`scheduling.cluster`).
"""

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import NamedTuple
from uuid import UUID

from django.db.models import Q, QuerySet

from tenants.models import Project

from . import engine
from .cluster.manifests import POOL_LABEL
from .cluster.specs import NodeSpec, PoolSpec, ProjectSpec, TaintSpec, TierSpec, WorkloadSpec
from .models import (
    Cluster,
    GpuClass,
    Node,
    NodePool,
    Placement,
    PriorityTier,
    QuotaGrant,
    Reservation,
    Workload,
)

MILLI_PER_GPU = engine.model.MILLI_PER_GPU


# Cluster specs


def pool_spec(pool: NodePool) -> PoolSpec:
    taint = (
        TaintSpec(key=pool.taint_key, value=pool.taint_value, effect=pool.taint_effect)
        if pool.taint_key
        else None
    )
    return PoolSpec(
        name=pool.name,
        gpu_class=pool.gpu_class_name,
        purpose=pool.purpose,
        labels=dict(pool.labels),
        taint=taint,
    )


def node_spec(node: Node) -> NodeSpec:
    return NodeSpec(name=node.name, pool=pool_spec(node.pool), topology=dict(node.topology))


def tier_spec(tier: PriorityTier) -> TierSpec:
    return TierSpec(
        name=tier.name, value=tier.value, preemptible=tier.preemptible, description=tier.description
    )


def project_spec(project: Project, *, region: str | None = None) -> ProjectSpec:
    """The namespace of a project, its GPU quota the sum of its organization's limits (or the
    project's own grants where the operator set them); in a cluster of `region`, each
    organization limit held to its cap there (`QuotaGrant.region_limits`)."""
    grants = QuotaGrant.objects.filter(organization_id=project.organization_id).filter(
        Q(project__isnull=True) | Q(project=project)
    )
    # A project's own grant of a resource replaces its organization's.
    per_resource: dict[tuple, QuotaGrant] = {}
    for grant in grants.select_related("gpu_class"):
        key = (grant.gpu_class_id, grant.resource, grant.mig_profile)
        if grant.project_id or key not in per_resource:
            per_resource[key] = grant
    quota: dict[str, int] = defaultdict(int)
    for grant in per_resource.values():
        limit = min(grant.limit, grant.region_limits.get(region, grant.limit))
        if grant.resource == QuotaGrant.Resource.MIG:
            quota[f"nvidia.com/{grant.mig_profile}"] += limit
        elif grant.resource == QuotaGrant.Resource.SHARED:
            # Kubernetes counts a time-sliced share as one device whatever its size, so the
            # namespace caps share pods at one per milli-GPU granted (never tighter than the
            # engine, which counts the milli-GPU themselves).
            quota[grant.gpu_class.shared_resource_name] += limit
        else:
            quota[grant.gpu_class.resource_name] += limit
    # What a class's grants leave out is not granted: the namespace may use none of it either.
    for grant in per_resource.values():
        gpu_class = grant.gpu_class
        for resource in (gpu_class.resource_name, gpu_class.shared_resource_name):
            quota.setdefault(resource, 0)
        for profile in gpu_class.mig_profiles:
            quota.setdefault(f"nvidia.com/{profile}", 0)
    owner = project.organization.memberships.filter(role="owner").select_related("user").first()
    return ProjectSpec(
        organization=project.organization.slug,
        project=project.slug,
        namespace=project.namespace,
        owner_email=owner.user.email if owner else "",
        gpu_quota=dict(quota),
    )


def _gpu_resource(workload: Workload, gpu_class: GpuClass | None) -> tuple[str | None, int]:
    if gpu_class is None:
        return None, 0
    if workload.gpus:
        return gpu_class.resource_name, workload.gpus
    if workload.gpu_milli:
        return gpu_class.shared_resource_name, 1
    if workload.mig_count:
        return f"nvidia.com/{workload.mig_profile}", workload.mig_count
    return None, 0


def workload_spec(workload: Workload, *, placements: Iterable[Placement] = ()) -> WorkloadSpec:
    """The workload as its admission placed it: one replica per placement (an elastic gang
    admitted short gets only the replicas the engine placed), on the placements' nodes.
    Without placements (it is not admitted), the replicas it asked for: enough to name every
    object it may have had."""
    placements = list(placements)
    nodes = [placement.node for placement in placements]
    resource, count = _gpu_resource(workload, workload.gpu_class)
    pool = nodes[0].pool if nodes else None
    expires_at = (
        workload.admitted_at + workload.max_runtime
        if workload.admitted_at and workload.max_runtime
        else None
    )
    return WorkloadSpec(
        id=str(workload.pk),
        name=workload.object_name,
        namespace=workload.project.namespace,
        kind=workload.kind,
        organization=workload.project.organization.slug,
        project=workload.project.slug,
        owner=workload.submitted_by.email if workload.submitted_by else "",
        tier=workload.tier.name,
        image=workload.image,
        command=tuple(workload.command),
        env=dict(workload.env),
        replicas=len(placements) or workload.replicas,
        gpu_resource=resource,
        gpu_count=count,
        cpu=f"{workload.cpu_milli}m",
        memory=f"{workload.memory_mib}Mi",
        pool=pool_spec(pool) if pool else None,
        nodes=tuple(sorted({node.name for node in nodes})),
        max_runtime_seconds=int(workload.max_runtime.total_seconds())
        if workload.max_runtime
        else None,
        expires_at=expires_at,
        notice_seconds=workload.tier.notice_seconds,
    )


# Engine snapshot


def _engine_taint(pool: NodePool) -> tuple[engine.Taint, ...]:
    if not pool.taint_key:
        return ()
    return (
        engine.Taint(
            key=pool.taint_key,
            value=pool.taint_value,
            effect=engine.TaintEffect(pool.taint_effect),
        ),
    )


# A node's shape: GPU class ("" for a CPU node), GPUs, CPU, memory, and its pool's taint
# (key, value, effect; an empty key for none).
Shape = tuple[str, int, int, int, str, str, str]


def _shape_taints(key: str, value: str, effect: str) -> tuple[engine.Taint, ...]:
    return (engine.Taint(key=key, value=value, effect=engine.TaintEffect(effect)),) if key else ()


def _empty_nodes(shapes: Iterable[Shape]) -> tuple[engine.NodeState, ...]:
    return tuple(
        engine.NodeState(
            name=f"shape-{index}",
            pool="",
            gpu_class=gpu_class or "",
            gpu_free_milli=(MILLI_PER_GPU,) * gpus,
            cpu_free_milli=cpu,
            memory_free_mib=memory,
            taints=_shape_taints(key, value, effect),
        )
        for index, (gpu_class, gpus, cpu, memory, key, value, effect) in enumerate(shapes)
    )


def node_shapes(nodes: QuerySet[Node]) -> tuple[engine.NodeState, ...]:
    """One empty node of each distinct shape (GPU class, GPUs, CPU, memory, taint): all that
    `engine.validate_request` compares a replica with, in one small query."""
    shapes = nodes.values_list(
        "pool__gpu_class__name",
        "gpu_count",
        "cpu_milli",
        "memory_mib",
        "pool__taint_key",
        "pool__taint_value",
        "pool__taint_effect",
    )
    return _empty_nodes(shapes.order_by().distinct())


def schedulable_shapes(nodes: Iterable[Node]) -> tuple[engine.NodeState, ...]:
    """The same for nodes already loaded (with their pool's class), cordoned ones left out:
    what the cycle's never-fits check compares a replica with."""
    return _empty_nodes(
        sorted(
            {
                (
                    node.pool.gpu_class_name,
                    node.gpu_count,
                    node.cpu_milli,
                    node.memory_mib,
                    node.pool.taint_key,
                    node.pool.taint_value,
                    node.pool.taint_effect,
                )
                for node in nodes
                if not node.cordoned
            }
        )
    )


def engine_nodes(
    nodes: Iterable[Node], active: Iterable[Placement]
) -> tuple[engine.NodeState, ...]:
    """Free capacity per node: its capacity less what ``active`` placements hold (never below
    none: a terminating placement and the one that replaces it may count the same GPUs)."""
    used_by_node: dict[int, list[Placement]] = defaultdict(list)
    for placement in active:
        used_by_node[placement.node_id].append(placement)
    states = []
    for node in nodes:
        gpu_free = [MILLI_PER_GPU] * node.gpu_count
        mig_free = dict(node.mig_layout)
        cpu, memory = node.cpu_milli, node.memory_mib
        for placement in used_by_node[node.pk]:
            for index in placement.gpu_indices:
                if index < len(gpu_free):
                    share = placement.gpu_milli or MILLI_PER_GPU
                    gpu_free[index] = max(0, gpu_free[index] - share)
            if placement.mig_profile:
                # At 0 at least: a terminating victim's and its preemptor's instance are one.
                mig_free[placement.mig_profile] = max(
                    0, mig_free.get(placement.mig_profile, 0) - placement.mig_count
                )
            cpu -= placement.cpu_milli
            memory -= placement.memory_mib
        states.append(
            engine.NodeState(
                name=node.name,
                pool=node.pool.name,
                gpu_class=node.pool.gpu_class_name,
                gpu_free_milli=tuple(gpu_free),
                cpu_free_milli=max(0, cpu),
                memory_free_mib=max(0, memory),
                mig_free=mig_free,
                labels={**node.labels, **node.pool.labels, POOL_LABEL: node.pool.name},
                taints=_engine_taint(node.pool),
                topology=dict(node.topology),
                # An unreachable cluster's pools take no new work (`services.clusters`).
                cordoned=node.cordoned or node.pool.cluster.state == Cluster.State.UNREACHABLE,
                cluster=node.pool.cluster.name,
                region=node.pool.cluster.region,
            )
        )
    return tuple(states)


def gpu_tolerations(pools: Iterable[NodePool]) -> tuple[engine.Toleration, ...]:
    """What every GPU workload tolerates: the taints of the GPU pools (CPU-only work has none,
    so it never lands on a GPU node)."""
    seen = {}
    for pool in pools:
        for taint in _engine_taint(pool):
            seen[(taint.key, taint.value, taint.effect)] = engine.Toleration(
                key=taint.key,
                operator=engine.TolerationOperator.EQUAL,
                value=taint.value,
                effect=taint.effect,
            )
    return tuple(seen.values())


def shape_tolerations(shapes: Iterable[engine.NodeState]) -> tuple[engine.Toleration, ...]:
    """`gpu_tolerations` read from node shapes (no query): the taints of the GPU nodes."""
    seen = {}
    for shape in shapes:
        for taint in shape.taints if shape.gpu_class else ():
            seen[(taint.key, taint.value, taint.effect)] = engine.Toleration(
                key=taint.key,
                operator=engine.TolerationOperator.EQUAL,
                value=taint.value,
                effect=taint.effect,
            )
    return tuple(seen.values())


class WorkloadRow(NamedTuple):
    """A workload as the scheduling cycle reads it: the fields `engine_request` and
    `engine_running` read of a Workload, under the same names, with its project (its
    organization loaded), tier and GPU class attached, and its waiting reason. Ten thousand
    load in a fraction of the time of as many model instances."""

    pk: UUID
    project: Project
    tier: PriorityTier
    gpu_class: GpuClass | None
    kind: str
    gpu_classes: list[str]
    gpus: int
    gpu_milli: int
    mig_profile: str
    mig_count: int
    replicas: int
    min_replicas: int | None
    cpu_milli: int
    memory_mib: int
    required_topology: str
    region: str
    max_runtime: timedelta | None
    preemptible: bool
    borrowed: bool
    evictions: int
    checkpoint_interval: timedelta | None
    last_checkpoint_at: datetime | None
    submitted_at: datetime
    admitted_at: datetime | None
    pending_code: str
    pending_message: str
    queue_position: int | None
    estimated_start: datetime | None
    estimated_start_low: datetime | None
    estimated_start_high: datetime | None
    first_estimate_at: datetime | None
    first_estimate: datetime | None
    first_estimate_low: datetime | None
    first_estimate_high: datetime | None
    first_estimate_scale: float
    first_estimate_actual: datetime | None

    # The model's own rule, so that a row and its Workload never disagree.
    needs_gpu = Workload.needs_gpu


# The columns of a WorkloadRow, in its order: the related rows' keys in place of the rows.
WORKLOAD_ROW_COLUMNS = ("id", "project_id", "tier_id", "gpu_class_id", *WorkloadRow._fields[4:])


def workload_rows(queryset: QuerySet[Workload], *, classes: dict, tiers: dict) -> list[WorkloadRow]:
    """The workloads as rows of what the cycle reads (the rest, an environment that may be
    large among it, stays in the database), with their project, organization, tier and GPU
    class, each loaded once however many workloads share it (10,000 pending share a few hundred
    projects); ``classes`` and ``tiers`` by id."""
    rows = list(queryset.values_list(*WORKLOAD_ROW_COLUMNS))
    projects = Project.objects.select_related("organization").in_bulk({row[1] for row in rows})
    # Made from tuples (`_make`): no call with 35 arguments per row, a third faster.
    make = WorkloadRow._make
    return [
        make((row[0], projects[row[1]], tiers[row[2]], classes.get(row[3]), *row[4:]))
        for row in rows
    ]


def engine_request(
    workload: Workload | WorkloadRow, *, tolerations: tuple[engine.Toleration, ...]
) -> engine.Request:
    return engine.Request(
        id=str(workload.pk),
        tenant=workload.project.organization.slug,
        project=workload.project.slug,
        tier=workload.tier.value,
        gpu_classes=tuple(workload.gpu_classes),
        submitted_at=workload.submitted_at,
        gpus=workload.gpus,
        gpu_milli=workload.gpu_milli,
        mig_profile=workload.mig_profile or None,
        mig_count=workload.mig_count,
        replicas=workload.replicas,
        min_replicas=workload.min_replicas,
        cpu_milli=workload.cpu_milli,
        memory_mib=workload.memory_mib,
        tolerations=tolerations if workload.needs_gpu else (),
        anti_affinity=workload.kind == Workload.Kind.INFERENCE,
        required_topology=workload.required_topology or None,
        region=workload.region or None,
        max_runtime=workload.max_runtime,
        preemptible=workload.preemptible,
        min_run_time=workload.tier.min_run_time or timedelta(0),
        max_evictions=workload.tier.max_evictions,
        evictions=workload.evictions,
    )


def engine_running(
    workload: Workload | WorkloadRow, placements: list[Placement], *, tolerations
) -> engine.RunningWorkload:
    return engine.RunningWorkload(
        request=engine_request(workload, tolerations=tolerations),
        gpu_class=workload.gpu_class.name if workload.gpu_class else "",
        placements=tuple(
            engine.ReplicaPlacement(
                node=p.node.name,
                gpu_indices=tuple(p.gpu_indices),
                gpu_milli=p.gpu_milli,
                mig_profile=p.mig_profile or None,
                mig_count=p.mig_count,
                cpu_milli=p.cpu_milli,
                memory_mib=p.memory_mib,
            )
            for p in placements
        ),
        started_at=workload.admitted_at or workload.submitted_at,
        borrowed=workload.borrowed,
        last_checkpoint=workload.last_checkpoint_at,
        checkpoint_interval=workload.checkpoint_interval,
    )


def engine_quotas(grants: Iterable[QuotaGrant]) -> tuple[engine.Quota, ...]:
    return tuple(
        engine.Quota(
            tenant=grant.organization.slug,
            gpu_class=grant.gpu_class.name,
            guarantee=grant.guarantee,
            limit=grant.limit,
            project=grant.project.slug if grant.project_id else None,
            cohort=grant.cohort or None,
            mig_profile=grant.mig_profile or None,
            shared=grant.resource == QuotaGrant.Resource.SHARED,
            region_limits=tuple(sorted(grant.region_limits.items())),
        )
        for grant in grants
    )


def engine_reservations(
    reservations: Iterable[Reservation], *, as_booked: bool = False
) -> tuple[engine.Reservation, ...]:
    """What the engine holds: the GPUs each pool can still give, or ``as_booked`` the GPUs as
    booked (what a new reservation request is checked against)."""
    return tuple(
        engine.Reservation(
            id=str(reservation.pk),
            tenant=reservation.organization.slug,
            gpu_class=reservation.gpu_class.name,
            gpus=reservation.gpus if as_booked else reservation.held_gpus,
            pool=reservation.pool.name,
            starts_at=reservation.starts_at,
            ends_at=reservation.ends_at,
            lead_time=reservation.lead_time,
            project=reservation.project.slug if reservation.project_id else None,
            mig_profile=reservation.mig_profile or None,
        )
        for reservation in reservations
        if as_booked or reservation.held_gpus
    )


def topology_levels(pools: Iterable[NodePool]) -> tuple[str, ...]:
    """Every pool's topology keys, narrowest first, each once."""
    levels: list[str] = []
    for pool in pools:
        for key in pool.topology_keys:
            if key not in levels:
                levels.append(key)
    return tuple(levels)


def placement_row(
    *, workload: Workload, replica: int, placement: engine.ReplicaPlacement, node: Node, **times
) -> Placement:
    """An unsaved Placement of one replica the engine placed; ``times`` are its
    ``started_at`` and any of ``running_at`` and ``ended_at``."""
    return Placement(
        workload=workload,
        replica=replica,
        node=node,
        gpu_indices=list(placement.gpu_indices),
        gpu_milli=placement.gpu_milli,
        mig_profile=placement.mig_profile or "",
        mig_count=placement.mig_count,
        cpu_milli=placement.cpu_milli,
        memory_mib=placement.memory_mib,
        **times,
    )
