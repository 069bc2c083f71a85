"""The scheduling cycle: the only bridge between the ORM and the engine. It loads a snapshot,
converts it (`specs_from_models`), lets the engine decide, and persists admissions,
preemptions and pending reasons in one transaction; launches and teardowns follow after commit."""

import dataclasses
import gc
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q

from portal import clock
from portal.db import rows_update, values_insert, values_update
from portal.events import Event, ExtensionPoint, holds_collect, publish
from tenants.models import Organization

from .. import engine, metrics, selectors
from ..engine.fairness import usage_shares
from ..models import (
    GpuClass,
    Node,
    NodePool,
    Placement,
    PriorityTier,
    QuotaGrant,
    Reservation,
    SchedulerState,
    Workload,
    WorkloadEvent,
)
from ..specs_from_models import (
    WorkloadRow,
    engine_nodes,
    engine_quotas,
    engine_reservations,
    engine_running,
    gpu_tolerations,
    placement_row,
    schedulable_shapes,
    topology_levels,
    workload_rows,
)
from .cycle_parking import park, parked
from .cycle_requests import engine_requests
from .cycle_state import requests_served
from .fairness import tenant_usage_update
from .lifecycle import workloads_evict
from .quotas import quota_increases_apply
from .timeline import EVENT_FIELDS, event_row
from .what_if_state import cycle_end_keep

# Any stable 64-bit number: the PostgreSQL advisory lock that lets one cycle run at a time.
CYCLE_LOCK_KEY = 7_340_501_206
# Longer than any cycle waits in its queue: a request older than this lost its task.
# Rows per statement when the cycle writes many.
BATCH = 1_000


@dataclass(frozen=True)
class CycleResult:
    ran: bool
    admitted: tuple[str, ...] = ()
    preempted: tuple[str, ...] = ()
    pending: int = 0
    milliseconds: float = 0.0


def _cycle_lock() -> bool:
    """Take the cycle's lock for this transaction; False when another cycle holds it."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [CYCLE_LOCK_KEY])
            return bool(cursor.fetchone()[0])
    # SQLite has no advisory locks: the first write takes the database's write lock.
    state, _ = SchedulerState.objects.get_or_create(pk=1)
    SchedulerState.objects.filter(pk=state.pk).update(last_cycle_at=clock.now())
    return True


# What the cycle writes of a workload it admits, and of one it leaves waiting.
ADMISSION_FIELDS = [
    "state",
    "admitted_at",
    "gpu_class",
    "borrowed",
    "pending_code",
    "pending_message",
    "queue_position",
    "estimated_start",
    "estimated_start_low",
    "estimated_start_high",
    "first_estimate_actual",
    "objects_deleted_at",
    "teardown_due_at",
]
# A waiting workload's place and estimate, and the first estimate it got (kept once made).
PLACE_FIELDS = ["queue_position", "estimated_start", "estimated_start_low", "estimated_start_high"]
FIRST_ESTIMATE_FIELDS = [
    "first_estimate_at",
    "first_estimate",
    "first_estimate_low",
    "first_estimate_high",
    "first_estimate_scale",
]
PENDING_FIELDS = ["pending_code", "pending_message", *PLACE_FIELDS, *FIRST_ESTIMATE_FIELDS]


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


def _written(pk, **fields) -> Workload:
    """A Workload of only its key and `fields`, for rows_update to write and placements to
    point at: made as `.only("id")` loads one, at a fraction of the cost of `Workload(...)`,
    which computes every other field's default."""
    workload = Workload.from_db(Workload.objects.db, ["id"], [pk])
    for name, value in fields.items():
        setattr(workload, name, value)
    return workload


def _active_placements():
    return Placement.objects.filter(ended_at__isnull=True).select_related("node")


@contextmanager
def _collector_paused():
    """Python's cyclic garbage collector waits while the cycle runs. The cycle makes a few
    hundred thousand objects that live until it returns (freed then by their reference
    counts); meanwhile the collector would walk the whole heap three times for nothing, a
    sixth of a cycle over 10,000 pending workloads."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass(frozen=True)
class CycleInputs:
    """What a cycle reads: the engine's snapshot, queue and running work, and the rows they
    were made of."""

    snapshot: engine.ClusterSnapshot
    requests: list[engine.Request]
    running: list[engine.RunningWorkload]
    pending: list[WorkloadRow]
    held: list[tuple]
    active: list[WorkloadRow]
    ready_nodes: list[Node]
    pools: list[NodePool]


def default_policy() -> engine.Policy:
    return engine.Policy(
        placement=settings.PORTAL_PLACEMENT_POLICY,
        reclaim_after=timedelta(seconds=settings.PORTAL_RECLAIM_AFTER_SECONDS),
        reservation_lead_time=timedelta(seconds=settings.PORTAL_RESERVATION_LEAD_SECONDS),
    )


def cycle_inputs(*, now, past: Mapping[str, float] | None = None) -> CycleInputs:
    """Read the cluster, the queue and the running work as the engine takes them (reads
    only: the cycle and a what-if without a kept state both start here). ``past``: each
    organization's decayed usage of ended work as of ``now`` (the cycle passes what it has
    just brought up to date; none: as the last cycle left it)."""
    pools = list(NodePool.objects.select_related("gpu_class"))
    tolerations = gpu_tolerations(pools)
    placements = list(_active_placements())
    by_workload: dict = {}
    for placement in placements:
        by_workload.setdefault(placement.workload_id, []).append(placement)
    related = {"classes": GpuClass.objects.in_bulk(), "tiers": PriorityTier.objects.in_bulk()}
    active = workload_rows(Workload.objects.filter(state__in=Workload.ACTIVE_STATES), **related)
    # A requeued workload whose old objects are still due for deletion waits for them to
    # go (placed again at once, the late teardown would delete its new objects), and an
    # evicted one for its backoff.
    waiting = Workload.objects.filter(
        Q(requeue_not_before__isnull=True) | Q(requeue_not_before__lte=now),
        state=Workload.State.PENDING,
        teardown_due_at__isnull=True,
    )
    pending, held = _held(workload_rows(waiting.order_by("submitted_at", "pk"), **related))
    ready_nodes = list(
        Node.objects.filter(ready=True).select_related("pool__gpu_class", "pool__cluster")
    )
    running = [
        engine_running(w, by_workload.get(w.pk, []), tolerations=tolerations) for w in active
    ]
    decay = selectors.usage_decay()
    if past is None and decay.enabled:
        past = selectors.past_usage(now=now)
    snapshot = engine.ClusterSnapshot(
        # Evicted work's pods keep their GPUs through its notice.
        nodes=engine_nodes(ready_nodes, [*placements, *selectors.terminating_placements(now=now)]),
        # Seeded by the cycle's time: the same cycle draws the same estimates.
        runtimes=selectors.runtime_samples(
            workloads=[*pending, *active], now=now, seed=int(now.timestamp())
        ),
        quotas=engine_quotas(
            QuotaGrant.objects.select_related("organization", "project", "gpu_class")
        ),
        topology_levels=topology_levels(pools) or ("rack", "block"),
        tenant_weights={
            slug: float(weight)
            for slug, weight in Organization.objects.values_list("slug", "fair_share_weight")
        },
        tenant_usage=usage_shares(decay, past=past or {}, running=running, now=now),
        node_shapes=schedulable_shapes(ready_nodes),
        reservations=engine_reservations(
            Reservation.objects.filter(
                state__in=Reservation.SCHEDULED_STATES, ends_at__gt=now
            ).select_related("organization", "project", "gpu_class", "pool")
        ),
    )
    return CycleInputs(
        snapshot=snapshot,
        requests=engine_requests(pending, tolerations=tolerations),
        running=running,
        pending=pending,
        held=held,
        active=active,
        ready_nodes=ready_nodes,
        pools=pools,
    )


def cycle_decide(
    loaded: CycleInputs, *, now, policy: engine.Policy | None = None
) -> tuple[engine.Decisions, engine.CycleEnd]:
    """The engine's decisions on what a cycle read, and the state they leave for what-ifs;
    the last cycle's parked answers reused where they hold, and this cycle's parked."""
    decisions, end = engine.schedule_keeping(
        snapshot=loaded.snapshot,
        pending=loaded.requests,
        running=loaded.running,
        now=now,
        policy=policy or default_policy(),
        parked=parked(),
    )
    park(decisions.parking)
    return decisions, end


@_collector_paused()
def scheduling_cycle_run(*, policy: engine.Policy | None = None) -> CycleResult:
    """Load a snapshot, let the engine decide, persist admissions, preemptions and pending
    reasons in one transaction; launch and stop on the cluster after it commits."""
    started = clock.monotonic()
    places_written_at = requests_served()
    with transaction.atomic():
        if not _cycle_lock():
            return CycleResult(ran=False)
        now = clock.now()
        refresh = timedelta(seconds=settings.PORTAL_PLACES_REFRESH_SECONDS)
        places_due = places_written_at is None or now - places_written_at >= refresh
        # Increases (a quota package's period) count exactly from their start to their end.
        quota_increases_apply(now=now)
        loaded = cycle_inputs(now=now, past=tenant_usage_update(now=now))
        decisions, end = cycle_decide(loaded, now=now, policy=policy)
        held, pending, active = loaded.held, loaded.pending, loaded.active
        if held:
            reasons = tuple(reason for _, reason in held)
            decisions = dataclasses.replace(decisions, pending=(*decisions.pending, *reasons))
        workloads = {str(w.pk): w for w in [*pending, *active, *(row for row, _ in held)]}
        _persist(
            decisions,
            workloads=workloads,
            nodes={node.name: node for node in loaded.ready_nodes},
            classes={p.gpu_class.name: p.gpu_class for p in loaded.pools if p.gpu_class},
            scale=loaded.snapshot.runtimes.interval_scale,
            now=now,
            places_due=places_due,
        )
        cycle_end_keep(end)
        elapsed = (clock.monotonic() - started) * 1000
        SchedulerState.objects.update_or_create(
            pk=1,
            defaults={
                "last_cycle_at": now,
                "last_cycle_ms": elapsed,
                "last_admitted": len(decisions.admissions),
                "last_preempted": len(decisions.preemptions),
                "last_pending": len(decisions.pending),
                "quota_standings": _standings(decisions),
                **({"places_written_at": now} if places_due else {}),
            },
        )
        admitted = tuple(a.request_id for a in decisions.admissions)
        preempted = tuple(p.victim_id for p in decisions.preemptions)
        # Counted once the decisions are committed (a rolled back cycle decided nothing).
        waits = [
            (a.gpu_class, (now - workloads[a.request_id].submitted_at).total_seconds())
            for a in decisions.admissions
        ]
        transaction.on_commit(
            lambda: metrics.cycle_observe(
                seconds=elapsed / 1000, admitted=waits, preempted=len(preempted)
            )
        )
    return CycleResult(
        ran=True,
        admitted=admitted,
        preempted=preempted,
        pending=len(decisions.pending),
        milliseconds=elapsed,
    )


def _standings(decisions: engine.Decisions) -> dict[str, dict[str, list[int]]]:
    """The cycle's quota standings as `SchedulerState.quota_standings` keeps them."""
    standings: dict[str, dict[str, list[int]]] = {}
    for standing in decisions.standings:
        standings.setdefault(standing.tenant, {})[standing.resource] = [
            standing.borrowed,
            standing.borrowable,
        ]
    return standings


def _persist(
    decisions: engine.Decisions,
    *,
    workloads: dict[str, WorkloadRow],
    nodes: dict[str, Node],
    classes: dict[str, GpuClass],
    scale: float,
    now,
    places_due: bool,
) -> None:
    """Write the decisions: a few statements for the preemptions, the admissions and the
    waiting, however many. A waiting workload's moved place and estimate only when
    ``places_due`` (its new reason or first estimate at once)."""
    preemptions = decisions.preemptions
    if preemptions:
        workloads_evict(
            reasons={p.victim_id: p.message for p in preemptions},
            preempted_by={p.victim_id: p.preemptor_id for p in preemptions},
            event_data={
                p.victim_id: {"by": p.preemptor_id, "reason": p.reason}
                | ({"reservation": p.reservation_id} if p.reservation_id else {})
                for p in preemptions
            },
        )
    events: list[tuple] = []
    admitted: list[Workload] = []
    placements: list[Placement] = []
    for admission in decisions.admissions:
        row = workloads[admission.request_id]
        workload = _written(
            row.pk,
            state=Workload.State.ADMITTED,
            admitted_at=now,
            gpu_class=classes.get(admission.gpu_class),
            borrowed=admission.borrowed,
            pending_code="",
            pending_message="",
            queue_position=None,
            estimated_start=None,
            estimated_start_low=None,
            estimated_start_high=None,
            # The first admission after its first estimate is the start that estimate is
            # judged against.
            first_estimate_actual=row.first_estimate_actual
            or (now if row.first_estimate_at is not None else None),
            objects_deleted_at=None,
            teardown_due_at=None,
        )
        admitted.append(workload)
        placements.extend(
            placement_row(
                workload=workload,
                replica=index,
                placement=placement,
                node=nodes[placement.node],
                started_at=now,
            )
            for index, placement in enumerate(admission.placements)
        )
        where = ", ".join(sorted({p.node for p in admission.placements}))
        borrowed = " (borrowed capacity)" if admission.borrowed else ""
        events.append(
            event_row(
                row.pk,
                "admitted",
                f"Admitted on {admission.gpu_class}: {len(admission.placements)} replica(s) on "
                f"{where}{borrowed}.",
                at=now,
            )
        )
    rows_update(admitted, ADMISSION_FIELDS)
    if admitted:
        publish(Event.WORKLOADS_ADMITTED, workload_ids=[str(w.pk) for w in admitted])
    Placement.objects.bulk_create(placements, batch_size=BATCH)
    # Each row a tuple, key first: ten thousand waiting rows are written without a model
    # instance each, and only the fields that changed (in a next cycle, mostly the place).
    # A new first estimate goes with the changed reasons: one statement for both.
    changed, moved = [], []
    for reason in decisions.pending:
        row = workloads[reason.request_id]
        why = (reason.code, reason.message[:500])
        place = (
            reason.queue_position,
            reason.estimated_start,
            reason.estimated_start_low,
            reason.estimated_start_high,
        )
        first = _first_estimate(row, reason, scale=scale, now=now)
        new_reason = (row.pending_code, row.pending_message) != why
        if new_reason or first[0] != row.first_estimate_at:
            changed.append((row.pk, *why, *place, *first))
            if new_reason:
                event = event_row(row.pk, "pending", reason.message, at=now, code=reason.code)
                events.append(event)
        elif places_due and place != (
            row.queue_position,
            row.estimated_start,
            row.estimated_start_low,
            row.estimated_start_high,
        ):
            moved.append((row.pk, *place))
    values_update(Workload, PENDING_FIELDS, changed)
    values_update(Workload, PLACE_FIELDS, moved)
    values_insert(WorkloadEvent, EVENT_FIELDS, events)


def _first_estimate(row: WorkloadRow, reason: engine.PendingReason, *, scale: float, now) -> tuple:
    """A waiting workload's FIRST_ESTIMATE_FIELDS: the first estimate it had, or this one (its
    interval stretched by ``scale``) if it had none yet."""
    if row.first_estimate_at is None and reason.estimated_start is not None:
        return (
            now,
            reason.estimated_start,
            reason.estimated_start_low,
            reason.estimated_start_high,
            scale,
        )
    return (
        row.first_estimate_at,
        row.first_estimate,
        row.first_estimate_low,
        row.first_estimate_high,
        row.first_estimate_scale,
    )
