"""One admission cycle: order the queue, admit what fits, preempt where allowed, explain the rest.

Queue order: tier (highest first), then DRF fair share (lowest dominant share / weight first),
then submit time, then id. The cycle orchestrates; its collaborators each keep their own
state: ``ReservationBook`` (reserved pools), ``Backfill`` (the blocked heads' shadows),
``Preemptor`` (the victim search) and, once admissions are over, ``Estimator`` (start times).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from .backfill import Backfill, Shadow
from .capacity import SettledCapacity
from .eligibility import ineligibility, preference_score
from .estimates import EstimateQuery, Estimator
from .explain import (
    CAPACITY_CODES,
    PendingCode,
    capacity_shortfall,
    class_label,
    never_fits,
    no_eligible_node,
)
from .fragmentation import rare_workload, typical_workload
from .free_capacity import ClusterState, Demand
from .gang import GangShape, place_gang, topology_domains
from .model import (
    Admission,
    ClusterSnapshot,
    Decisions,
    PendingReason,
    Policy,
    Quota,
    ReplicaPlacement,
    Request,
    RunningWorkload,
    StartRange,
    TaintEffect,
    TaskType,
)
from .parking import Parker, Parking
from .policies import make_policy
from .preemption import PREEMPTION_CODES, Preemptor
from .quota import LargerThanAnyNode, QuotaLedger, dominant_shares, quota_capacity, validate_request
from .region_limits import RegionLimits
from .reservations import ReservationBook
from .running_ends import RunningEnds


@dataclass(frozen=True)
class _Failure:
    code: PendingCode
    message: str
    gpu_class: str


def task_type(demand: Demand) -> TaskType:
    return TaskType(cpu_milli=demand.cpu_milli, gpus=demand.gpus, gpu_milli=demand.gpu_milli)


def queue_order(*, pending: Sequence[Request], shares: dict[str, float]) -> list[Request]:
    return sorted(pending, key=lambda r: (-r.tier, shares.get(r.tenant, 0.0), r.submitted_at, r.id))


def schedule(
    *,
    snapshot: ClusterSnapshot,
    pending: Sequence[Request],
    running: Sequence[RunningWorkload],
    now: datetime,
    policy: Policy,
    parked: Parking | None = None,
) -> Decisions:
    """Decide admissions, placements, preemptions and pending reasons for one cycle.

    Pure: the same arguments give the same decisions, whatever ``parked`` (the last cycle's
    ``Decisions.parking``: it only spares deciding again). ``now`` must be timezone-aware.
    A preemptor is admitted in the same cycle onto its victims' capacity: stop the victims
    before starting it.
    """
    if now.tzinfo is None:
        raise ValueError("now must be a timezone-aware datetime")
    cycle = _Cycle(snapshot=snapshot, running=running, now=now, policy=policy)
    return cycle.run(pending, parked=parked)


def pending_reason(
    request_id: str, failure: _Failure, position: int, estimate: StartRange | None
) -> PendingReason:
    return PendingReason(
        request_id=request_id,
        code=failure.code.value,
        message=failure.message,
        queue_position=position,
        estimated_start=estimate.likely if estimate else None,
        estimated_start_low=estimate.low if estimate else None,
        estimated_start_high=estimate.high if estimate else None,
    )


def _ahead(shadow: Shadow, request: Request) -> str:
    """Who holds the capacity a backfill candidate waits behind, as its sentence says it."""
    if shadow.tier > request.tier:
        return f"higher-priority {shadow.request_id}"
    return f"{shadow.request_id}, ahead in the queue"


class _Cycle:
    def __init__(
        self,
        *,
        snapshot: ClusterSnapshot,
        running: Sequence[RunningWorkload],
        now: datetime,
        policy: Policy,
    ) -> None:
        self.snapshot, self.now, self.policy = snapshot, now, policy
        self.cluster = ClusterState(snapshot.nodes)
        self.running = {w.request.id: w for w in running}
        for workload in running:
            for placement in workload.placements:
                node = self.cluster.index.get(placement.node)
                if node is not None:
                    shape = Demand(gpus=len(placement.gpu_indices), gpu_milli=placement.gpu_milli)
                    self.cluster.note_replica(node=node, demand=shape)
        self.ledger = QuotaLedger(
            quotas=snapshot.quotas,
            running=running,
            capacity=quota_capacity(snapshot.nodes, running),
            weights=snapshot.tenant_weights,
            usage=snapshot.tenant_usage,
        )
        self._tenant_quotas: dict[str, list[Quota]] = defaultdict(list)
        for quota in snapshot.quotas:
            self._tenant_quotas[quota.tenant].append(quota)
        self.domains = topology_domains(cluster=self.cluster, levels=snapshot.topology_levels)
        self.larger_than_any_node = LargerThanAnyNode(snapshot.node_shapes)
        self._eligible_cache: dict[tuple, tuple[np.ndarray, Counter[str]]] = {}
        # Only PreferNoSchedule taints make nodes unequal in preference; hard ones only filter.
        self._soft_taints = any(
            t.effect == TaintEffect.PREFER_NO_SCHEDULE for n in self.cluster.nodes for t in n.taints
        )
        # Running work and the cluster's free capacity change for good only on admission or
        # eviction (trials restore what they change): ``_changed`` tells every memo of them.
        # Node sets kept to the end (eligible nodes, and those less a shadow) are registered
        # with ``settled``.
        self.settled = SettledCapacity(self.cluster)
        self.regions = RegionLimits(
            quotas=snapshot.quotas, nodes=self.cluster.nodes, running=running, settled=self.settled
        )
        self.reservations = ReservationBook(
            reservations=snapshot.reservations,
            now=now,
            cluster=self.cluster,
            settled=self.settled,
            running=self.running.values(),
            lead_time=policy.reservation_lead_time,
        )
        self.backfill = Backfill(
            cluster=self.cluster, settled=self.settled, running=self.running, now=now
        )
        # Off for a what-if's last request: only its estimate would use its shadow.
        self.plans_shadows = True
        # Nothing admitted or evicted yet: the cycle is on the world it read.
        self.quiet = True
        self.preemptor = Preemptor(
            cluster=self.cluster,
            ledger=self.ledger,
            reservations=self.reservations,
            running=self.running,
            now=now,
            reclaim_after=policy.reclaim_after,
            eligible=self._eligible_nodes,
            place=self._place,
            stop=self._stop,
        )

    def run(self, pending: Sequence[Request], *, parked: Parking | None = None) -> Decisions:
        ordered, demands = self.begin(pending)
        running = tuple(self.running.values())
        parker = Parker(parked, self.snapshot, running, self.policy, self._mix, now=self.now)
        admissions: list[Admission] = []
        self.failures: list[tuple[Request, _Failure]] = []
        for request, demand in zip(ordered, demands, strict=True):
            # Parked answers hold on the world the cycle read: until it admits or evicts.
            shadows = self.backfill.planned if self.quiet else None
            outcome = parker.answer(request, shadows) if shadows is not None else None
            if isinstance(outcome, _Failure):
                self._after_failure(request, demand, outcome)
            else:
                searches = self.preemptor.share_searches
                outcome = self.decide(request, demand)
                quiet = shadows is not None and searches == self.preemptor.share_searches
                if quiet and isinstance(outcome, _Failure):
                    parker.park(request, outcome, shadows)
            if isinstance(outcome, Admission):
                admissions.append(outcome)
            else:
                self.failures.append((request, outcome))
        return Decisions(
            admissions=tuple(admissions),
            preemptions=tuple(self.preemptor.preemptions),
            pending=tuple(self._explain(self.failures)),
            standings=self.ledger.standings(),
            parking=parker.parking(),
        )

    def begin(
        self, pending: Sequence[Request], *, mix: Counter[TaskType] | None = None
    ) -> tuple[list[Request], list[Demand]]:
        """Drain, order the queue, choose the placement policy's workload mix (``mix``: that
        of the whole queue and running work, when ``pending`` is part of it, as a what-if's)."""
        if self.policy.preemption:
            self.preemptor.drain_reservations()
        self.shares = dominant_shares(ledger=self.ledger, nodes=self.snapshot.nodes)
        ordered = queue_order(pending=pending, shares=self.shares)
        demands = [Demand.of(r) for r in ordered]
        if mix is None:
            mix = Counter(task_type(d) for d in demands)
            mix.update(task_type(Demand.of(w.request)) for w in self.running.values())
        workload = self.policy.target_workload or typical_workload(mix)
        rare = rare_workload(mix)
        self._mix = (workload, rare)
        self.placement = make_policy(
            name=self.policy.placement, seed=self.policy.seed, workload=workload, rare_workload=rare
        )
        return ordered, demands

    def decide(self, request: Request, demand: Demand) -> Admission | _Failure:
        """Admit one request now, in queue order, or say why it waits."""
        errors = validate_request(request=request, quotas=self._tenant_quotas[request.tenant])
        if errors:
            text = " ".join(m for messages in errors.values() for m in messages)
            return _Failure(PendingCode.INVALID, text, "")
        too_large = self.larger_than_any_node(request)
        if too_large:
            return _Failure(PendingCode.NEVER_FITS, never_fits(request, too_large), "")
        return self._admit(request, demand)

    # -- eligibility ---------------------------------------------------------------------

    def _eligible(self, request: Request, gpu_class: str) -> tuple[np.ndarray, Counter[str]]:
        key = (
            gpu_class if request.needs_gpu else None,
            request.pools,
            request.tolerations,
            request.required_affinity,
            request.needs_gpu,
            request.region,
        )
        cached = self._eligible_cache.get(key)
        if cached is None:
            reasons: Counter[str] = Counter()
            indices = []
            for i, node in enumerate(self.cluster.nodes):
                why = ineligibility(node=node, request=request, gpu_class=gpu_class)
                if why is None:
                    indices.append(i)
                elif not why.startswith("GPU class"):
                    reasons[why] += 1
            cached = self._eligible_cache[key] = (np.array(indices, dtype=np.int64), reasons)
            self.settled.keep(cached[0])
        return cached

    def _eligible_nodes(self, request: Request, gpu_class: str) -> np.ndarray:
        eligible = self._eligible(request, gpu_class)[0]
        return self.regions.within(request, gpu_class, eligible, request.replicas)[0]

    def _preference(self, request: Request) -> np.ndarray | None:
        owned = self.reservations.owned_pools(request)
        if not request.preferred_affinity and not owned and not self._soft_taints:
            return None
        return np.array(
            [
                preference_score(node=n, request=request) + (1000 if n.pool in owned else 0)
                for n in self.cluster.nodes
            ]
        )

    # -- admission -----------------------------------------------------------------------

    def _place(
        self,
        request: Request,
        shape: GangShape,
        among: np.ndarray,
        *,
        capacity: np.ndarray | None = None,
    ) -> tuple[ReplicaPlacement, ...] | None:
        return place_gang(
            cluster=self.cluster,
            shape=shape,
            among=among,
            policy=self.placement,
            domains=self.domains,
            preference=self._preference(request),
            capacity=capacity,
        )

    def _place_settled(
        self, request: Request, shape: GangShape, among: np.ndarray
    ) -> tuple[ReplicaPlacement, ...] | None:
        """``_place`` on the settled cluster, skipping gangs that cannot fit at all."""
        if self.settled.gang_room(shape=shape, among=among) < shape.min_replicas:
            return None  # what place_gang would conclude first, without touching anything
        capacity = self.settled.replica_capacity(demand=shape.demand, among=among)
        return self._place(request, shape, among, capacity=capacity)

    def _changed(self) -> None:
        self.quiet = False
        self.settled.changed()
        self.backfill.changed()
        self.preemptor.changed()

    def _admit(self, request: Request, demand: Demand) -> Admission | _Failure:
        classes = request.gpu_classes if request.needs_gpu else ("",)
        failures: list[_Failure] = []
        for gpu_class in classes:
            outcome = self._admit_on(request, demand, gpu_class)
            if isinstance(outcome, Admission):
                return outcome
            failures.append(outcome)
        if self.policy.preemption:
            for failure in failures:
                if failure.code in PREEMPTION_CODES:
                    admitted = self._preempt_for(request, demand, failure.gpu_class)
                    if admitted is not None:
                        return admitted
        self._after_failure(request, demand, failures[0])
        return failures[0]

    def _after_failure(self, request: Request, demand: Demand, failure: _Failure) -> None:
        """A request blocked on capacity plans its class's shadow if none is planned yet."""
        planned = self.backfill.shadow(failure.gpu_class)
        if failure.code in CAPACITY_CODES and self.plans_shadows and planned is None:
            self._plan_shadow(request, demand, failure.gpu_class)

    def _replicas_within_quota(self, request: Request, gpu_class: str) -> tuple[int, bool, str]:
        replicas, verdict = self.ledger.most_replicas(request=request, gpu_class=gpu_class)
        return replicas, verdict.borrowed, verdict.reason

    def _admit_on(self, request: Request, demand: Demand, gpu_class: str) -> Admission | _Failure:
        eligible, reasons = self._eligible(request, gpu_class)
        if not len(eligible):
            code, text = no_eligible_node(gpu_class=gpu_class, reasons=reasons)
            return _Failure(code, text, gpu_class)
        replicas, borrowed, quota_reason = self._replicas_within_quota(request, gpu_class)
        if not replicas:
            return _Failure(PendingCode.QUOTA, quota_reason, gpu_class)
        eligible, over_cap = self.regions.within(request, gpu_class, eligible, replicas)
        if not len(eligible):
            return _Failure(PendingCode.QUOTA, over_cap, gpu_class)
        shape = GangShape.of(request, demand, replicas)
        if shape.demand.mig_count:
            need = shape.demand.mig_count * replicas
        else:
            need = shape.demand.gpus * replicas if not shape.demand.is_shared else 0
        among, reserved_note = self.reservations.outside(request, gpu_class, eligible, need)
        among, shadow = self.backfill.outside_shadow(request, gpu_class, among)
        placements = self._place_settled(request, shape, among)
        if placements is None:
            return self._diagnose(request, gpu_class, shape, eligible, reserved_note, shadow)
        return self._record(request, gpu_class, placements, borrowed)

    def _preempt_for(self, request: Request, demand: Demand, gpu_class: str) -> Admission | None:
        preempted = self.preemptor.preempt_for(request, demand, gpu_class)
        if preempted is None:
            return None
        placements, borrowed = preempted
        return self._record(request, gpu_class, placements, borrowed)

    def _plan_shadow(self, request: Request, demand: Demand, gpu_class: str) -> None:
        """Give the class a shadow: this request, the first there blocked on capacity."""
        eligible, _ = self._eligible(request, gpu_class)
        replicas, _, _ = self._replicas_within_quota(request, gpu_class)
        if replicas:
            shape = GangShape.of(request, demand, replicas)
            self.backfill.plan(
                request, gpu_class, place=lambda: self._place(request, shape, eligible)
            )

    def _record(
        self,
        request: Request,
        gpu_class: str,
        placements: tuple[ReplicaPlacement, ...],
        borrowed: bool,
    ) -> Admission:
        self.ledger.charge(request=request, gpu_class=gpu_class, replicas=len(placements))
        self._changed()
        admitted = self.running[request.id] = RunningWorkload(
            request=request,
            gpu_class=gpu_class,
            placements=placements,
            started_at=self.now,
            borrowed=borrowed,
        )
        self.reservations.started(admitted)
        self.regions.charge(admitted)
        self.preemptor.protect(request.id)
        return Admission(
            request_id=request.id,
            gpu_class=gpu_class,
            placements=placements,
            borrowed=borrowed,
            preemptible=request.preemptible or borrowed,
        )

    def _stop(self, workload: RunningWorkload) -> None:
        """Take an evicted workload off the cluster's books (its capacity is already free)."""
        self.ledger.charge(
            request=workload.request,
            gpu_class=workload.gpu_class,
            replicas=len(workload.placements),
            sign=-1,
        )
        del self.running[workload.request.id]
        self.reservations.stopped(workload)
        self.regions.charge(workload, sign=-1)
        self._changed()

    # -- explanations ----------------------------------------------------------------------

    def _diagnose(
        self,
        request: Request,
        gpu_class: str,
        shape: GangShape,
        eligible: np.ndarray,
        reserved_note: str | None,
        shadow: Shadow | None,
    ) -> _Failure:
        label = class_label(gpu_class)
        if shadow is not None or reserved_note is not None:
            unrestricted = self._place_settled(request, shape, eligible)
            if unrestricted is not None:
                for placement in unrestricted:
                    self.cluster.release(placement)
                if shadow is not None:
                    return _Failure(
                        PendingCode.PRIORITY,
                        f"{label}: waiting behind {_ahead(shadow, request)}, planned"
                        f" to start at {shadow.starts_at.isoformat()}; this workload's max"
                        " runtime would delay it.",
                        gpu_class,
                    )
                return _Failure(PendingCode.RESERVATION, reserved_note or "", gpu_class)
        fitting = self.settled.gang_room(shape=shape, among=eligible)
        free = self.settled.free_gpus(among=eligible, shared=shape.demand.is_shared)
        code, text = capacity_shortfall(shape=shape, gpu_class=label, fitting=fitting, free=free)
        return _Failure(code, text, gpu_class)

    def estimator(self) -> Estimator:
        """Start estimates for what waits: made once admissions are over."""
        return Estimator(
            cluster=self.cluster,
            ledger=self.ledger,
            backfill=self.backfill,
            reservations=self.reservations,
            eligible=self._eligible_nodes,
            ends=RunningEnds(
                running=self.running.values(), samples=self.snapshot.runtimes, now=self.now
            ),
        )

    def _explain(self, failures: list[tuple[Request, _Failure]]) -> list[PendingReason]:
        estimator = self.estimator()
        queries = []
        ahead: Counter[str] = Counter()
        drawn = bool(self.snapshot.runtimes.buckets)
        for request, failure in failures:
            need = request.gpu_milli_per_replica * request.smallest_gang
            needed = ahead[failure.gpu_class] + need
            # With run-time samples, a request that takes several classes starts on the first
            # that frees enough; max runtimes alone keep the point estimate's first class.
            also = tuple(
                (other, ahead[other] + need)
                for other in request.gpu_classes
                if other != failure.gpu_class and failure.gpu_class and drawn
            )
            queries.append(EstimateQuery(request, failure.code, failure.gpu_class, needed, also))
            if failure.code in CAPACITY_CODES or failure.code == PendingCode.PRIORITY:
                ahead[failure.gpu_class] += need
                for other, _ in also:
                    ahead[other] += need
        estimates = estimator.estimate_all(queries)
        return [
            pending_reason(request.id, failure, position, estimate)
            for position, ((request, failure), estimate) in enumerate(
                zip(failures, estimates, strict=True), start=1
            )
        ]
