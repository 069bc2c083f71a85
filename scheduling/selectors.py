"""Reads of scheduling data, scoped to the caller's organizations like every tenant read."""

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from django.db.models import Count, F, Min, Prefetch, Q, QuerySet, Sum

from portal.db import one_or_not_found
from portal.errors import NotFound
from tenants.models import Organization, Project
from tenants.permissions import Action, Caller, authorize, require_operator, role_allows

from . import engine
from .engine.model import MILLI_PER_GPU, quota_resource
from .models import (
    GpuClass,
    Node,
    NodePool,
    Placement,
    PriorityTier,
    QuotaGrant,
    QuotaRequest,
    Reservation,
    SchedulerState,
    Workload,
    WorkloadEvent,
)
from .specs_from_models import engine_nodes


def workload_list(*, caller: Caller, project: Project) -> QuerySet[Workload]:
    authorize(caller=caller, organization=project.organization, action=Action.WORKLOAD_VIEW)
    return (
        Workload.objects.filter(project=project)
        .select_related("project__organization", "tier", "gpu_class", "submitted_by")
        .prefetch_related(
            Prefetch(
                "placements",
                queryset=Placement.objects.filter(ended_at__isnull=True).select_related("node"),
                to_attr="active_placements",
            )
        )
        .order_by("-submitted_at")
    )


def organization_workloads(*, caller: Caller, organization: Organization) -> QuerySet[Workload]:
    """The workloads of every live project of the organization, for any of its members."""
    authorize(caller=caller, organization=organization, action=Action.WORKLOAD_VIEW)
    return Workload.objects.filter(
        project__organization=organization, project__deleted_at__isnull=True
    ).select_related("project", "tier", "gpu_class")


def workload_get(*, caller: Caller, project: Project, name: str) -> Workload:
    workload = workload_list(caller=caller, project=project).filter(name=name).first()
    if workload is None:
        raise NotFound("No such workload.")
    return workload


def workload_cancel_permitted(*, caller: Caller, workload: Workload, role: str) -> bool:
    """Who may cancel a workload: its submitter, or a role that cancels anyone's work."""
    own = workload.submitted_by_id == caller.user.pk
    return own or role_allows(role, Action.WORKLOAD_CANCEL_ANY)


@dataclass(frozen=True)
class WorkloadClock:
    """How long a workload has waited and run, and how long it may still run."""

    waited: timedelta  # submission to start, or to now while it waits
    elapsed: timedelta | None  # start to finish, or to now while it runs; None before start
    remaining: timedelta | None  # to its maximum runtime while it runs; None without one


def workload_clock(workload: Workload, *, now: datetime) -> WorkloadClock:
    """``workload``'s waiting, running and remaining time at ``now``."""
    if workload.started_at is None:
        end_of_wait = workload.finished_at or now
        return WorkloadClock(
            waited=end_of_wait - workload.submitted_at, elapsed=None, remaining=None
        )
    end = workload.finished_at or now
    remaining = None
    if workload.expected_end and not workload.is_final:
        remaining = max(workload.expected_end - now, timedelta(0))
    return WorkloadClock(
        waited=workload.started_at - workload.submitted_at,
        elapsed=end - workload.started_at,
        remaining=remaining,
    )


def workload_events(*, workload: Workload) -> QuerySet[WorkloadEvent]:
    """The timeline of a workload the caller already reached through `workload_get`."""
    return workload.events.order_by("at", "id")


def quota_list(*, caller: Caller, organization: Organization) -> QuerySet[QuotaGrant]:
    authorize(caller=caller, organization=organization, action=Action.ORGANIZATION_VIEW)
    return QuotaGrant.objects.filter(organization=organization).select_related(
        "organization", "project", "gpu_class"
    )


def quota_usage(*, caller: Caller, organization: Organization) -> Counter[tuple[str | None, str]]:
    """What the organization's running work holds of each quota resource, in the resource's
    unit (GPUs, milli-GPU, MIG instances), as the engine counts it: keyed by (None, resource)
    for the organization and (project slug, resource) per project."""
    authorize(caller=caller, organization=organization, action=Action.ORGANIZATION_VIEW)
    usage: Counter[tuple[str | None, str]] = Counter()
    replicas = Placement.objects.filter(
        ended_at__isnull=True,
        workload__project__organization=organization,
        workload__gpu_class__isnull=False,
    ).values_list(
        "workload__project__slug",
        "workload__gpu_class__name",
        "workload__gpus",
        "workload__gpu_milli",
        "workload__mig_profile",
        "workload__mig_count",
    )
    for project, gpu_class, gpus, gpu_milli, mig_profile, mig_count in replicas:
        resource = quota_resource(
            gpu_class, mig_profile=mig_profile or None, shared=bool(gpu_milli)
        )
        usage[(None, resource)] += gpus or gpu_milli or mig_count
        usage[(project, resource)] += gpus or gpu_milli or mig_count
    return usage


@dataclass(frozen=True)
class QuotaUse:
    grant: QuotaGrant
    in_use: int
    # For the organization's own grants (None for a project's, or before any cycle): what it
    # holds above its guarantee, and what more it could borrow, as the last cycle left them.
    borrowed: int | None = None
    borrowable: int | None = None


def quota_overview(*, caller: Caller, organization: Organization) -> list[QuotaUse]:
    """Each of the organization's grants with what its running work holds of it, and for its
    own grants what it borrows and could still borrow, as the last scheduling cycle counted
    them (the engine's ledger over the whole cluster, too costly to build per page)."""
    usage = quota_usage(caller=caller, organization=organization)
    state = SchedulerState.objects.filter(pk=1).only("quota_standings").first()
    standings = state.quota_standings.get(organization.slug, {}) if state else {}
    overview = []
    for grant in quota_list(caller=caller, organization=organization):
        in_use = usage[(grant.usage_scope, grant.engine_resource)]
        standing = standings.get(grant.engine_resource) if grant.project_id is None else None
        borrowed, borrowable = standing if standing else (None, None)
        overview.append(
            QuotaUse(grant=grant, in_use=in_use, borrowed=borrowed, borrowable=borrowable)
        )
    return overview


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
    """Operators: every pool with its free and schedulable capacity by request size (the
    engine's view of the ready nodes), its nodes GPU by GPU and MIG instance by instance,
    with who holds each."""
    require_operator(caller)
    nodes = list(Node.objects.select_related("pool__gpu_class").order_by("pool__name", "name"))
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
        for capacity in capacities
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


def gpu_class_list() -> QuerySet[GpuClass]:
    return GpuClass.objects.order_by("name")


def tier_list() -> QuerySet[PriorityTier]:
    return PriorityTier.objects.order_by("-value")


def pool_list() -> QuerySet[NodePool]:
    """The GPU pools (what can be reserved and ordered), CPU pools left out."""
    return (
        NodePool.objects.filter(gpu_class__isnull=False)
        .select_related("gpu_class")
        .order_by("name")
    )


def pool_capacity(pool: NodePool, mig_profile: str = "") -> int:
    """Whole GPUs (or instances of ``mig_profile``) of the pool's schedulable (not cordoned)
    nodes."""
    nodes = Node.objects.filter(pool=pool, cordoned=False)
    if mig_profile:
        layouts = nodes.values_list("mig_layout", flat=True)
        return sum(layout.get(mig_profile, 0) for layout in layouts)
    return nodes.aggregate(gpus=Sum("gpu_count"))["gpus"] or 0


def pool_resources(pool: NodePool) -> list[tuple[str, int]]:
    """What can be reserved in the pool: its whole GPUs ("") and each MIG profile of its class
    that its nodes offer, with the capacity of each."""
    resources = [("", pool_capacity(pool))]
    for profile in pool.gpu_class.mig_profiles:
        if capacity := pool_capacity(pool, profile):
            resources.append((profile, capacity))
    return resources


def class_capacities(*, gpu_class: GpuClass, mig_profile: str = "") -> dict[str, int]:
    """``pool_capacity`` of each pool of the class, by pool name."""
    pools = NodePool.objects.filter(gpu_class=gpu_class).order_by("name")
    return {pool.name: pool_capacity(pool, mig_profile) for pool in pools}


def pool_capacity_named(name: str) -> int:
    """``pool_capacity`` of the pool called ``name`` (0 for none)."""
    pool = NodePool.objects.filter(name=name).first()
    return pool_capacity(pool) if pool else 0


def pool_of_class_exists(*, name: str, gpu_class: GpuClass) -> bool:
    return NodePool.objects.filter(name=name, gpu_class=gpu_class).exists()


def reservation_list(*, caller: Caller, organization: Organization) -> QuerySet[Reservation]:
    authorize(caller=caller, organization=organization, action=Action.RESERVATION_VIEW)
    return Reservation.objects.filter(organization=organization).select_related(
        "organization", "project", "gpu_class", "pool", "requested_by"
    )


def reservations_ahead(
    *, caller: Caller, organization: Organization, now: datetime
) -> QuerySet[Reservation]:
    """The organization's reservations not yet over that are asked for or hold capacity, the
    soonest first."""
    return (
        reservation_list(caller=caller, organization=organization)
        .filter(
            ends_at__gt=now,
            state__in=[Reservation.State.REQUESTED, *Reservation.SCHEDULED_STATES],
        )
        .order_by("starts_at")
    )


def reservation_get(*, caller: Caller, organization: Organization, pk) -> Reservation:
    """One of the organization's reservations; any other id (malformed, unknown, another
    tenant's) is a 404."""
    return one_or_not_found(
        reservation_list(caller=caller, organization=organization), pk, "reservation"
    )


def reservation_for_operator(*, caller: Caller, pk) -> Reservation:
    """Any organization's reservation, for an operator's decision."""
    require_operator(caller)
    return one_or_not_found(Reservation.objects.select_related("organization"), pk, "reservation")


def quota_request_for_operator(*, caller: Caller, pk) -> QuotaRequest:
    """Any organization's quota request, for an operator's decision."""
    require_operator(caller)
    requests = QuotaRequest.objects.select_related("organization")
    return one_or_not_found(requests, pk, "quota request")


def quota_request_list(*, caller: Caller, organization: Organization) -> QuerySet[QuotaRequest]:
    authorize(caller=caller, organization=organization, action=Action.ORGANIZATION_VIEW)
    return QuotaRequest.objects.filter(organization=organization).select_related(
        "organization", "project", "gpu_class", "requested_by"
    )


def quota_request_get(*, caller: Caller, organization: Organization, pk) -> QuotaRequest:
    return one_or_not_found(
        quota_request_list(caller=caller, organization=organization), pk, "quota request"
    )


@dataclass(frozen=True)
class ReservedBlock:
    """A reservation on a pool's timeline: the caller's own in detail, others' anonymous."""

    starts_at: datetime
    ends_at: datetime
    gpus: int
    own: bool
    reservation: Reservation | None


@dataclass(frozen=True)
class FreeDay:
    day: date
    free_gpus: int


@dataclass(frozen=True)
class PoolTimeline:
    pool: NodePool
    # "" for whole GPUs, else the MIG profile whose instances the row counts.
    mig_profile: str
    capacity: int
    blocks: list[ReservedBlock]
    # The least free GPUs over each day of the span: what a new reservation could still get.
    free_by_day: list[FreeDay]


def reservation_timeline(
    *, caller: Caller, organization: Organization, now: datetime, days: int
) -> list[PoolTimeline]:
    """Per GPU pool and reservable resource (whole GPUs, each MIG profile its nodes offer),
    the reservations holding it from ``now`` to the end of the ``days`` calendar days that
    start with today, in the organization's time zone, and the free capacity of each such day
    (today's from now on), so that a free slot is visible before asking for it."""
    authorize(caller=caller, organization=organization, action=Action.RESERVATION_VIEW)
    days_of = calendar_days(now=now, zone=organization.zone, days=days)
    starts_at, ends_at = days_of[0][1], days_of[-1][2]
    timelines = []
    rows = [(pool, *resource) for pool in pool_list() for resource in pool_resources(pool)]
    for pool, mig_profile, capacity in rows:
        holding = Reservation.objects.filter(
            pool=pool,
            mig_profile=mig_profile,
            state__in=Reservation.HOLDING_STATES,
            starts_at__lt=ends_at,
            ends_at__gt=starts_at,
        ).select_related("gpu_class", "project")
        blocks = [
            ReservedBlock(
                starts_at=r.starts_at,
                ends_at=r.ends_at,
                gpus=r.gpus,
                own=r.organization_id == organization.pk,
                reservation=r if r.organization_id == organization.pk else None,
            )
            for r in holding
        ]
        free_by_day = []
        for day, day_start, day_end in days_of:
            edges = sorted(
                {day_start} | {b.starts_at for b in blocks if day_start < b.starts_at < day_end}
            )
            peak = max(
                sum(b.gpus for b in blocks if b.starts_at <= edge < b.ends_at) for edge in edges
            )
            free_by_day.append(FreeDay(day, capacity - peak))
        timelines.append(PoolTimeline(pool, mig_profile, capacity, blocks, free_by_day))
    return timelines


def calendar_days(
    *, now: datetime, zone: tzinfo, days: int
) -> list[tuple[date, datetime, datetime]]:
    """The ``days`` calendar days in ``zone`` from the one ``now`` falls on: each as its date
    and its span in UTC, from midnight to midnight (23 or 25 hours across a daylight-saving
    change), today's from ``now``."""
    today = now.astimezone(zone).date()
    midnights = [
        datetime.combine(today + timedelta(days=k), time.min, tzinfo=zone).astimezone(UTC)
        for k in range(days + 1)
    ]
    return [
        (today + timedelta(days=k), max(midnights[k], now), midnights[k + 1]) for k in range(days)
    ]


def placements_ran(*, since_pk: int = 0) -> QuerySet[Placement]:
    """GPU placements that ran (the cluster reported them running), past ``since_pk``, with
    what metering needs of their workload, project, node and tier: billing's source of
    truth for usage."""
    return (
        Placement.objects.filter(
            pk__gt=since_pk, running_at__isnull=False, workload__gpu_class__isnull=False
        )
        .select_related("workload__project", "workload__tier", "node__pool")
        .order_by("pk")
    )


def placements_ended() -> QuerySet[Placement]:
    """Placements that ended (released their GPUs), for metering to close their intervals."""
    return Placement.objects.filter(ended_at__isnull=False)


# Operators' figures for /metrics (scheduling/metrics.py): the whole cluster, every tenant.


@dataclass(frozen=True)
class PendingCount:
    organization: str
    gpu_class: str  # the first class it accepts ("any": none named)
    reason: str  # the engine's pending code ("new": no cycle has looked at it yet)
    count: int
    oldest_submitted_at: datetime


def pending_workload_counts() -> list[PendingCount]:
    """Waiting workloads by organization, first acceptable GPU class and reason, with when the
    longest-waiting of each group was submitted."""
    rows = (
        Workload.objects.filter(state=Workload.State.PENDING)
        .values_list("project__organization__slug", "gpu_classes", "pending_code")
        .annotate(count=Count("id"), oldest=Min("submitted_at"))
        .order_by()
    )
    groups: dict[tuple[str, str, str], PendingCount] = {}
    for organization, classes, code, count, oldest in rows:
        key = (organization, classes[0] if classes else "any", code or "new")
        if key in groups:
            seen = groups[key]
            count += seen.count
            oldest = min(oldest, seen.oldest_submitted_at)
        groups[key] = PendingCount(*key, count=count, oldest_submitted_at=oldest)
    return sorted(groups.values(), key=lambda p: (p.organization, p.gpu_class, p.reason))


def cluster_capacity() -> list[engine.PoolCapacity]:
    """Per pool and class, as on the cluster page (`cluster_overview`): GPUs of the ready
    nodes, the idle ones, and how many 1-, 2-, 4- and 8-GPU requests fit now."""
    placements = list(Placement.objects.filter(ended_at__isnull=True).select_related("node"))
    ready = list(Node.objects.filter(ready=True).select_related("pool__gpu_class"))
    return engine.pool_capacity(nodes=engine_nodes(ready, placements))


def _placement_gpus(gpu_indices: list, gpu_milli: int) -> float:
    """Whole GPUs a placement holds (a share counts its fraction)."""
    return len(gpu_indices) * (gpu_milli or MILLI_PER_GPU) / MILLI_PER_GPU


def gpus_borrowed_by_pool() -> Counter[tuple[str, str]]:
    """GPUs (not MIG instances) that work on borrowed quota holds, by (pool, GPU class)."""
    held: Counter[tuple[str, str]] = Counter()
    rows = Placement.objects.filter(
        ended_at__isnull=True, workload__borrowed=True, mig_count=0
    ).values_list("node__pool__name", "node__pool__gpu_class__name", "gpu_indices", "gpu_milli")
    for pool, gpu_class, indices, milli in rows:
        held[(pool, gpu_class)] += _placement_gpus(indices, milli)
    return held


@dataclass(frozen=True)
class ReservationUse:
    reservation: Reservation
    in_use: float  # of what it holds, what its holders' own work uses in its pool


def reservations_in_use(*, now: datetime) -> list[ReservationUse]:
    """Every reservation whose window is open now (approved or active) with what its holders'
    work uses of it: their GPUs (MIG instances of its profile, for a MIG reservation) in its
    pool, a project's reservation filled by the project's work first, the organization's by
    what is left of all its work there."""
    reservations = Reservation.objects.filter(
        state__in=Reservation.SCHEDULED_STATES, starts_at__lte=now, ends_at__gt=now
    ).select_related("organization", "project", "pool", "gpu_class")
    used: Counter[tuple[int, str, int, int | None]] = Counter()
    rows = Placement.objects.filter(ended_at__isnull=True).values_list(
        "node__pool_id",
        "mig_profile",
        "mig_count",
        "workload__project__organization_id",
        "workload__project_id",
        "gpu_indices",
        "gpu_milli",
    )
    for pool, profile, instances, organization, project, indices, milli in rows:
        held = instances if profile else _placement_gpus(indices, milli)
        used[(pool, profile, organization, None)] += held
        used[(pool, profile, organization, project)] += held
    uses = []
    # Project reservations first: their project's work fills them before the organization's.
    for reservation in sorted(reservations, key=lambda r: r.project_id is None):
        scope = (reservation.pool_id, reservation.mig_profile, reservation.organization_id)
        taken = min(used[(*scope, reservation.project_id)], reservation.held_gpus)
        used[(*scope, reservation.project_id)] -= taken
        if reservation.project_id is not None:  # what it took is no longer the organization's
            used[(*scope, None)] -= taken
        uses.append(ReservationUse(reservation=reservation, in_use=taken))
    return uses


def last_cycle_at() -> datetime | None:
    """When the scheduling cycle last ran (None: never)."""
    return SchedulerState.objects.filter(pk=1).values_list("last_cycle_at", flat=True).first()


def notebooks_running() -> list[tuple[str, int, int]]:
    """Per organization: its running notebooks, and how many of them have idle GPUs."""
    rows = (
        Workload.objects.filter(state=Workload.State.RUNNING, kind=Workload.Kind.NOTEBOOK)
        .values_list("project__organization__slug")
        .annotate(running=Count("id"), idle=Count("id", filter=Q(idle_since__isnull=False)))
        .order_by("project__organization__slug")
    )
    return list(rows)


def project_namespaces() -> list[tuple[str, str, str]]:
    """(namespace, organization, project) of every live project: joins GPU metrics that are
    labelled by namespace (NVIDIA DCGM's) to tenants."""
    return list(
        Project.objects.filter(deleted_at__isnull=True)
        .order_by("namespace")
        .values_list("namespace", "organization__slug", "slug")
    )


def quota_grants_to_come(*, organization: Organization) -> list[QuotaGrant]:
    """The organization's grants as they will be once its approved increases that have not
    started yet (a quota package bought for a later period) count: unsaved copies, for what
    submission may queue to wait for them."""
    grants = {
        (g.project_id, g.gpu_class_id, g.resource, g.mig_profile): g
        for g in QuotaGrant.objects.filter(organization=organization).select_related(
            "organization", "project", "gpu_class"
        )
    }
    ahead = QuotaRequest.objects.filter(
        organization=organization, state=QuotaRequest.State.APPROVED, applied_at__isnull=True
    ).select_related("organization", "project", "gpu_class")
    for increase in ahead:
        key = (increase.project_id, increase.gpu_class_id, increase.resource, increase.mig_profile)
        grant = grants.get(key) or QuotaGrant(
            organization=increase.organization,
            project=increase.project,
            gpu_class=increase.gpu_class,
            resource=increase.resource,
            mig_profile=increase.mig_profile,
            guarantee=0,
            limit=0,
        )
        grants[key] = grant
        grant.guarantee += increase.granted_amount or 0
        grant.limit += increase.granted_amount or 0
    return list(grants.values())
