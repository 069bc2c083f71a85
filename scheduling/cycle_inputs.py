"""What a scheduling cycle weighs, loaded from the database and converted for the engine: for
the cycle itself (`services.cycle`), and for reads that ask the engine about one workload
on the same state (its alternatives, `selectors.alternatives`)."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q

from portal.events import ExtensionPoint, holds_collect
from tenants.models import Organization, Project

from . import engine
from .models import (
    GpuClass,
    Node,
    NodePool,
    Placement,
    PriorityTier,
    QuotaGrant,
    Reservation,
    Workload,
)
from .specs_from_models import (
    WORKLOAD_ROW_COLUMNS,
    WorkloadRow,
    engine_nodes,
    engine_quotas,
    engine_request,
    engine_reservations,
    engine_running,
    gpu_tolerations,
    schedulable_shapes,
    topology_levels,
)


def default_policy() -> engine.Policy:
    """The policy the settings make: what every cycle runs."""
    return engine.Policy(
        placement=settings.PORTAL_PLACEMENT_POLICY,
        reclaim_after=timedelta(seconds=settings.PORTAL_RECLAIM_AFTER_SECONDS),
        reservation_lead_time=timedelta(seconds=settings.PORTAL_RESERVATION_LEAD_SECONDS),
    )


def _workloads(queryset, *, classes: dict, tiers: dict) -> list[WorkloadRow]:
    """The workloads as rows of what the cycle reads (the rest, an environment that may be
    large among it, stays in the database), with their project, organization, tier and GPU
    class, each loaded once however many workloads share it (10,000 pending share a few hundred
    projects)."""
    rows = list(queryset.values_list(*WORKLOAD_ROW_COLUMNS))
    projects = Project.objects.select_related("organization").in_bulk({row[1] for row in rows})
    return [
        WorkloadRow(pk, projects[project], tiers[tier], classes.get(gpu_class), *rest)
        for pk, project, tier, gpu_class, *rest in rows
    ]


def _held(rows: list[WorkloadRow]) -> tuple[list[WorkloadRow], list[tuple]]:
    """Split the pending workloads into those the engine weighs and those another app's check
    holds for now (a spent hard-stop budget: scheduling knows nothing of money), each with its
    reason. The checks are asked once for all the projects that wait."""
    if not rows:
        return rows, []
    holds = holds_collect(
        ExtensionPoint.PENDING_HOLD,
        projects={row.project.pk: row.project.organization_id for row in rows},
    )
    if not holds:
        return rows, []
    weighed, held = [], []
    for row in rows:
        hold = holds.get(row.project.pk)
        if hold is None:
            weighed.append(row)
            continue
        code, message = hold
        # Out of the queue while held: no place in it, no estimated start.
        reason = engine.PendingReason(
            request_id=str(row.pk),
            code=code,
            message=message,
            queue_position=None,  # type: ignore[arg-type]
            estimated_start=None,
        )
        held.append((row, reason))
    return weighed, held


@dataclass(frozen=True)
class CycleInputs:
    """What a cycle reads: the engine's snapshot, queue and running work, and the rows they
    were made of."""

    snapshot: engine.ClusterSnapshot
    requests: list[engine.Request]  # of `pending`, in its order
    running: list[engine.RunningWorkload]  # of `active`, in its order
    pending: list[WorkloadRow]  # weighed by the engine, oldest first
    held: list[tuple[WorkloadRow, engine.PendingReason]]  # held by another app's check
    active: list[WorkloadRow]  # admitted or running
    ready_nodes: list[Node]
    pools: list[NodePool]


def cycle_inputs(*, now: datetime) -> CycleInputs:
    """Everything a cycle at ``now`` weighs, in a fixed number of queries."""
    pools = list(NodePool.objects.select_related("gpu_class"))
    tolerations = gpu_tolerations(pools)
    by_workload: dict = {}
    for placement in Placement.objects.filter(ended_at__isnull=True).select_related("node"):
        by_workload.setdefault(placement.workload_id, []).append(placement)
    related = {"classes": GpuClass.objects.in_bulk(), "tiers": PriorityTier.objects.in_bulk()}
    active = _workloads(Workload.objects.filter(state__in=Workload.ACTIVE_STATES), **related)
    # A requeued workload whose old objects are still due for deletion waits for them to
    # go (placed again at once, the late teardown would delete its new objects), and an
    # evicted one for its backoff.
    waiting = Workload.objects.filter(
        Q(requeue_not_before__isnull=True) | Q(requeue_not_before__lte=now),
        state=Workload.State.PENDING,
        teardown_due_at__isnull=True,
    )
    pending, held = _held(_workloads(waiting.order_by("submitted_at", "pk"), **related))
    ready_nodes = list(Node.objects.filter(ready=True).select_related("pool__gpu_class"))
    placements = [p for group in by_workload.values() for p in group]
    snapshot = engine.ClusterSnapshot(
        nodes=engine_nodes(ready_nodes, placements),
        quotas=engine_quotas(
            QuotaGrant.objects.select_related("organization", "project", "gpu_class")
        ),
        topology_levels=topology_levels(pools) or ("rack", "block"),
        tenant_weights={
            slug: float(weight)
            for slug, weight in Organization.objects.values_list("slug", "fair_share_weight")
        },
        node_shapes=schedulable_shapes(ready_nodes),
        reservations=engine_reservations(
            Reservation.objects.filter(
                state__in=Reservation.SCHEDULED_STATES, ends_at__gt=now
            ).select_related("organization", "project", "gpu_class", "pool")
        ),
    )
    return CycleInputs(
        snapshot=snapshot,
        requests=[engine_request(w, tolerations=tolerations) for w in pending],
        running=[
            engine_running(w, by_workload.get(w.pk, []), tolerations=tolerations) for w in active
        ],
        pending=pending,
        held=held,
        active=active,
        ready_nodes=ready_nodes,
        pools=pools,
    )
