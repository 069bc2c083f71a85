"""Operators' figures for /metrics (scheduling/metrics.py) and the insights: the whole
cluster, every tenant."""

from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, Min, Q

from tenants.models import Project

from .. import engine
from ..engine.model import MILLI_PER_GPU
from ..models import Node, Placement, Reservation, SchedulerState, Workload
from ..specs_from_models import engine_nodes


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
    ready = list(Node.objects.filter(ready=True).select_related("pool__gpu_class", "pool__cluster"))
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
    ).select_related("organization", "project", "pool__cluster", "gpu_class")
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
