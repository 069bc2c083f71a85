"""One admission cycle: order the queue, admit what fits, preempt where allowed, explain the rest.

Queue order: tier (highest first), then DRF fair share (lowest dominant share / weight first),
then submit time, then id. Backfill is EASY-style per GPU class: the first workload blocked on
capacity gets a planned start (its "shadow time", from running workloads' max runtimes) and
planned nodes; a later workload may use those nodes only if its own max runtime ends before.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from .capacity import SettledCapacity
from .cluster import ClusterState, Demand
from .eligibility import ineligibility, preference_score
from .explain import PendingCode, capacity_shortfall, no_eligible_node
from .fragmentation import rare_workload, typical_workload
from .gang import GangShape, gang_capacity, place_gang, topology_domains
from .model import (
    MILLI_PER_GPU,
    Admission,
    ClusterSnapshot,
    Decisions,
    PendingReason,
    Policy,
    Preemption,
    Quota,
    ReplicaPlacement,
    Request,
    Reservation,
    RunningWorkload,
    TaskType,
)
from .policies import make_policy
from .preemption import MAX_CANDIDATES, Victim, choose_victims, eviction_cost
from .quota import QuotaLedger, dominant_shares, validate_request

CAPACITY_CODES = frozenset(
    {PendingCode.CAPACITY, PendingCode.FRAGMENTATION, PendingCode.GANG, PendingCode.TOPOLOGY}
)
# Waiting for these reasons, a request may try to evict lower-priority work.
PREEMPTION_CODES = CAPACITY_CODES | {PendingCode.RESERVATION, PendingCode.QUOTA}


@dataclass(frozen=True)
class _Shadow:
    """A blocked head's planned start and the nodes it will need then."""

    request_id: str
    starts_at: datetime
    held: np.ndarray  # one flag per node of the cluster


@dataclass(frozen=True)
class _Failure:
    code: PendingCode
    message: str
    gpu_class: str


def task_type(demand: Demand) -> TaskType:
    return TaskType(cpu_milli=demand.cpu_milli, gpus=demand.gpus, gpu_milli=demand.gpu_milli)


def queue_order(*, pending: Sequence[Request], shares: dict[str, float]) -> list[Request]:
    return sorted(
        pending,
        key=lambda r: (-r.tier, shares.get(r.tenant, 0.0), r.submitted_at, r.id),
    )


def schedule(
    *,
    snapshot: ClusterSnapshot,
    pending: Sequence[Request],
    running: Sequence[RunningWorkload],
    now: datetime,
    policy: Policy,
) -> Decisions:
    """Decide admissions, placements, preemptions and pending reasons for one cycle.

    Pure: the same arguments give the same decisions. ``now`` must be timezone-aware.
    A preemptor is admitted in the same cycle onto its victims' capacity: stop the victims
    before starting it.
    """
    if now.tzinfo is None:
        raise ValueError("now must be a timezone-aware datetime")
    return _Cycle(snapshot=snapshot, running=running, now=now, policy=policy).run(pending)


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
        self.ledger = QuotaLedger(quotas=snapshot.quotas, running=running)
        self._tenant_quotas: dict[str, list[Quota]] = defaultdict(list)
        for quota in snapshot.quotas:
            self._tenant_quotas[quota.tenant].append(quota)
        self.domains = topology_domains(cluster=self.cluster, levels=snapshot.topology_levels)
        self.reservations = [r for r in snapshot.reservations if r.is_active(now=now)]
        self.pools = np.array([n.pool for n in self.cluster.nodes])
        # GPU milli each tenant runs per (tenant, class, pool), for reservation owners' usage;
        # kept up to date on admission and eviction.
        self._pool_usage: Counter[tuple[str, str, str]] = Counter()
        for workload in self.running.values():
            self._count_pool_usage(workload, sign=1)
        self.shadows: dict[str, _Shadow] = {}
        self.protected: set[str] = set()  # admitted or evicted this cycle: not victims again
        self.preemptions: list[Preemption] = []
        self._eligible_cache: dict[tuple, tuple[np.ndarray, Counter[str]]] = {}
        self._soft_taints = any(n.taints for n in self.cluster.nodes)
        # Running work and the cluster's free capacity change for good only on admission or
        # eviction (trials restore what they change): ``_changed`` counts those, and caches
        # below key on the count. Node sets kept to the end (eligible nodes, and those less a
        # shadow) are registered with ``settled``.
        self._version = 0
        self.settled = SettledCapacity(self.cluster)
        self._unshadowed: dict[tuple[str, int], np.ndarray] = {}
        self._release_cache: dict[str, tuple[int, list[RunningWorkload]]] = {}
        self._hopeless: set[tuple] = set()
        self._names: dict[int, set[str]] = {}
        self._evictable: dict[str, tuple[list[int], list[RunningWorkload]]] = {}
        self._own_evictable: dict[tuple[str, str], list[RunningWorkload]] = {}

    def run(self, pending: Sequence[Request]) -> Decisions:
        shares = dominant_shares(
            ledger=self.ledger,
            nodes=self.snapshot.nodes,
            weights=dict(self.snapshot.tenant_weights),
        )
        ordered = queue_order(pending=pending, shares=shares)
        demands = [Demand.of(r) for r in ordered]
        tasks = [task_type(d) for d in demands] + [
            task_type(Demand.of(w.request)) for w in self.running.values()
        ]
        self.placement = make_policy(
            name=self.policy.placement,
            seed=self.policy.seed,
            workload=self.policy.target_workload or typical_workload(tasks),
            rare_workload=rare_workload(tasks),
        )
        admissions: list[Admission] = []
        failures: list[tuple[Request, _Failure]] = []
        for request, demand in zip(ordered, demands, strict=True):
            errors = validate_request(request=request, quotas=self._tenant_quotas[request.tenant])
            if errors:
                text = " ".join(m for messages in errors.values() for m in messages)
                failures.append((request, _Failure(PendingCode.INVALID, text, "")))
                continue
            outcome = self._admit(request, demand)
            if isinstance(outcome, Admission):
                admissions.append(outcome)
            else:
                failures.append((request, outcome))
        pending_reasons = self._explain(failures)
        return Decisions(
            admissions=tuple(admissions),
            preemptions=tuple(self.preemptions),
            pending=tuple(pending_reasons),
        )

    # -- eligibility ---------------------------------------------------------------------

    def _eligible(self, request: Request, gpu_class: str) -> tuple[np.ndarray, Counter[str]]:
        wants_gpu = bool(request.gpus or request.gpu_milli or request.mig_count)
        key = (
            gpu_class if wants_gpu else None,
            request.pools,
            request.tolerations,
            request.required_affinity,
            wants_gpu,
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

    def _preference(self, request: Request) -> np.ndarray | None:
        owned = {r.pool for r in self.reservations if r.tenant == request.tenant}
        if not request.preferred_affinity and not owned and not self._soft_taints:
            return None
        return np.array(
            [
                preference_score(node=n, request=request) + (1000 if n.pool in owned else 0)
                for n in self.cluster.nodes
            ]
        )

    # -- reservations ----------------------------------------------------------------------

    def _reserved_for_others(self, request: Request, gpu_class: str) -> dict[str, int]:
        """Per pool, whole GPUs of ``gpu_class`` held by other tenants' reservations and not
        used by them."""
        held: dict[str, int] = Counter()
        for reservation in self.reservations:
            if reservation.gpu_class == gpu_class and reservation.tenant != request.tenant:
                used = self._owner_usage(reservation)
                held[reservation.pool] += max(reservation.gpus * MILLI_PER_GPU - used, 0)
        return {pool: milli // MILLI_PER_GPU for pool, milli in held.items() if milli}

    def _owner_usage(self, reservation: Reservation) -> int:
        return self._pool_usage[(reservation.tenant, reservation.gpu_class, reservation.pool)]

    def _count_pool_usage(self, workload: RunningWorkload, *, sign: int) -> None:
        for placement in workload.placements:
            node = self.cluster.index.get(placement.node)
            if node is not None:
                key = (workload.request.tenant, workload.gpu_class, self.cluster.nodes[node].pool)
                self._pool_usage[key] += sign * placement.gpu_milli * len(placement.gpu_indices)

    def _outside_reservations(
        self, request: Request, gpu_class: str, among: np.ndarray, need_gpus: int
    ) -> tuple[np.ndarray, str | None]:
        """Drop pools whose idle GPUs are held for others, unless the request is preemptible."""
        if request.preemptible:
            return among, None
        held = self._reserved_for_others(request, gpu_class)
        idle = self.settled.idle_by_pool(among=among) if held else {}
        blocked = [pool for pool, gpus in held.items() if idle.get(pool, 0) - need_gpus < gpus]
        if not blocked:
            return among, None
        owners = sorted(
            {r.tenant for r in self.reservations if r.pool in blocked and r.gpu_class == gpu_class}
        )
        note = (
            f"{gpu_class}: {sum(held[p] for p in blocked)} GPUs in pool {', '.join(blocked)}"
            f" are reserved for {', '.join(owners)}; only preemptible work may use them."
        )
        return among[~np.isin(self.pools[among], blocked)], note

    # -- admission -----------------------------------------------------------------------

    def _shape(self, request: Request, demand: Demand, replicas: int) -> GangShape:
        return GangShape(
            demand=demand,
            replicas=replicas,
            min_replicas=min(request.smallest_gang, replicas),
            anti_affinity=request.anti_affinity,
            required_level=request.required_topology,
        )

    def _place(
        self,
        request: Request,
        shape: GangShape,
        among: np.ndarray,
        *,
        capacity: np.ndarray | None = None,
    ):
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
        self._version += 1
        self.settled.changed()

    def _admit(self, request: Request, demand: Demand) -> Admission | _Failure:
        classes = request.gpu_classes if (demand.gpus or request.mig_count) else ("",)
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
        first = failures[0]
        if first.code in CAPACITY_CODES and first.gpu_class not in self.shadows:
            self._plan_shadow(request, demand, first.gpu_class)
        return first

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
        shape = self._shape(request, demand, replicas)
        need_gpus = shape.demand.gpus * replicas if not shape.demand.is_shared else 0
        among, reserved_note = self._outside_reservations(request, gpu_class, eligible, need_gpus)
        among, shadow = self._outside_shadow(request, gpu_class, among)
        placements = self._place_settled(request, shape, among)
        if placements is None:
            return self._diagnose(request, gpu_class, shape, eligible, reserved_note, shadow)
        return self._record(request, gpu_class, placements, borrowed)

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
        self._count_pool_usage(admitted, sign=1)
        self.protected.add(request.id)
        return Admission(
            request_id=request.id,
            gpu_class=gpu_class,
            placements=placements,
            borrowed=borrowed,
            preemptible=request.preemptible or borrowed,
        )

    # -- backfill --------------------------------------------------------------------------

    def _outside_shadow(
        self, request: Request, gpu_class: str, among: np.ndarray
    ) -> tuple[np.ndarray, _Shadow | None]:
        shadow = self.shadows.get(gpu_class)
        if shadow is None or shadow.request_id == request.id:
            return among, None
        runtime = request.max_runtime
        if runtime is not None and self.now + runtime <= shadow.starts_at:
            return among, None
        if not self.settled.kept(among):
            return among[~shadow.held[among]], shadow
        # The shadow of a class never changes, so a kept node set loses its nodes only once.
        key = (gpu_class, id(among))
        unshadowed = self._unshadowed.get(key)
        if unshadowed is None:
            unshadowed = self._unshadowed[key] = self.settled.keep(among[~shadow.held[among]])
        return unshadowed, shadow

    def _releases(self, gpu_class: str) -> list[RunningWorkload]:
        """Running work with a max runtime, in the order it will end."""
        cached = self._release_cache.get(gpu_class)
        if cached is not None and cached[0] == self._version:
            return cached[1]
        ending = [
            w
            for w in self.running.values()
            if w.expected_end is not None and (not gpu_class or w.gpu_class == gpu_class)
        ]
        ordered = sorted(ending, key=lambda w: (w.expected_end, w.request.id))
        self._release_cache[gpu_class] = (self._version, ordered)
        return ordered

    def _plan_shadow(self, request: Request, demand: Demand, gpu_class: str) -> None:
        """Find the earliest release of running work after which the head fits (binary search
        over the release order), and hold the nodes it would take."""
        releases = self._releases(gpu_class)
        eligible, _ = self._eligible(request, gpu_class)
        replicas, _, _ = self._replicas_within_quota(request, gpu_class)
        if not releases or not replicas:
            return
        shape = self._shape(request, demand, replicas)
        saved = self.cluster.checkpoint()
        # The search only probes counts above the largest that did not fit, so each probe
        # releases from that one's cluster onwards instead of from the first release.
        base_count, base = 0, saved

        def fits_after(count: int) -> tuple[ReplicaPlacement, ...] | None:
            nonlocal base_count, base
            self.cluster.restore(base)
            for workload in releases[base_count:count]:
                for placement in workload.placements:
                    self.cluster.release(placement)
            released = self.cluster.checkpoint()
            placements = self._place(request, shape, eligible)
            if placements is None:
                base_count, base = count, released
            return placements

        low, high = 1, len(releases)
        if fits_after(high) is None:
            self.cluster.restore(saved)
            return
        while low < high:
            middle = (low + high) // 2
            if fits_after(middle) is None:
                low = middle + 1
            else:
                high = middle
        placements = fits_after(low)
        self.cluster.restore(saved)
        assert placements is not None
        held = np.zeros(len(self.cluster), dtype=bool)
        held[[self.cluster.index[p.node] for p in placements]] = True
        starts_at = releases[low - 1].expected_end
        assert starts_at is not None
        self.shadows[gpu_class] = _Shadow(request.id, starts_at, held)

    # -- preemption ------------------------------------------------------------------------

    def _victim_reason(
        self, request: Request, victim: RunningWorkload, *, may_reclaim: bool, owned_pools: set[str]
    ) -> str | None:
        other = victim.request
        if not other.preemptible or other.id in request.evicted_by or other.id in self.protected:
            return None
        if other.tier < request.tier:
            return "priority"
        if other.tenant == request.tenant:
            return None
        if may_reclaim and (
            victim.borrowed
            or self.ledger.is_borrowing(tenant=other.tenant, gpu_class=victim.gpu_class)
        ):
            mine = self.ledger.quota(tenant=request.tenant, gpu_class=victim.gpu_class)
            theirs = self.ledger.quota(tenant=other.tenant, gpu_class=victim.gpu_class)
            if mine and theirs and mine.cohort == theirs.cohort:
                return "reclaim"
        if owned_pools and any(
            self.cluster.nodes[self.cluster.index[p.node]].pool in owned_pools
            for p in victim.placements
            if p.node in self.cluster.index
        ):
            return "reservation"
        return None

    def _by_tier(self, gpu_class: str) -> tuple[list[int], list[RunningWorkload]]:
        """Running work of a class that may still be evicted this cycle, cheapest to evict
        first (so lowest tier first), with the tier of each.

        Admissions are protected from eviction, so this is the cycle's input work less what
        was evicted: sorted once per class, then only ``_forget_evicted`` changes it."""
        evictable = self._evictable.get(gpu_class)
        if evictable is None:
            ordered = sorted(
                (
                    w
                    for w in self.running.values()
                    if w.gpu_class == gpu_class and w.request.id not in self.protected
                ),
                key=lambda w: eviction_cost(workload=w, now=self.now),
            )
            evictable = self._evictable[gpu_class] = ([w.request.tier for w in ordered], ordered)
        return evictable

    def _forget_evicted(self, workload: RunningWorkload) -> None:
        tiers, ordered = self._evictable.get(workload.gpu_class, ([], []))
        for position, candidate in enumerate(ordered):
            if candidate is workload:
                del tiers[position], ordered[position]
                return

    def _own_lower_tier(self, request: Request, gpu_class: str) -> list[RunningWorkload]:
        """The tenant's own running work of the class below the request's tier, cheapest to
        evict first: what it may preempt to make room within its own quota."""
        _, ordered = self._by_tier(gpu_class)
        key = (gpu_class, request.tenant)
        own = self._own_evictable.get(key)
        if own is None:
            own = self._own_evictable[key] = [
                w for w in ordered if w.request.tenant == request.tenant
            ]
        return [w for w in own if w.request.tier < request.tier and w.request.id in self.running]

    def _quota_allows_without(
        self, request: Request, gpu_class: str, replicas: int, victims: Sequence[Victim]
    ) -> bool:
        for victim in victims:
            self.ledger.charge(
                request=victim.workload.request,
                gpu_class=victim.workload.gpu_class,
                replicas=len(victim.workload.placements),
                sign=-1,
            )
        try:
            return self.ledger.check(
                request=request, gpu_class=gpu_class, replicas=replicas
            ).allowed
        finally:
            for victim in victims:
                self.ledger.charge(
                    request=victim.workload.request,
                    gpu_class=victim.workload.gpu_class,
                    replicas=len(victim.workload.placements),
                )

    def _preempt_for(self, request: Request, demand: Demand, gpu_class: str) -> Admission | None:
        tiers, workloads = self._by_tier(gpu_class)
        if not workloads:
            return None
        eligible, _ = self._eligible(request, gpu_class)
        replicas, borrowed, _ = self._replicas_within_quota(request, gpu_class)
        # At its quota limit, a tenant may still evict its own lower-tier work (as Kueue's
        # withinClusterQueue: LowerPriority): those victims must free the quota too.
        within_own_quota = not replicas
        if within_own_quota:
            workloads = self._own_lower_tier(request, gpu_class)
            replicas = request.smallest_gang
        if not workloads or not len(eligible):
            return None
        eligible_names = self._names.get(id(eligible))
        if eligible_names is None:
            eligible_names = {self.cluster.nodes[i].name for i in eligible.tolist()}
            self._names[id(eligible)] = eligible_names
        quota = self.ledger.quota(tenant=request.tenant, gpu_class=gpu_class)
        verdict = self.ledger.check(
            request=request, gpu_class=gpu_class, replicas=request.smallest_gang
        )
        # Reclaiming needs a cohort and a request that stays within its own guarantee.
        may_reclaim = bool(quota and quota.cohort and verdict.allowed and not verdict.borrowed)
        owned_pools = {
            r.pool
            for r in self.reservations
            if r.tenant == request.tenant and r.gpu_class == gpu_class
        }
        if not may_reclaim and not owned_pools and not within_own_quota:
            workloads = workloads[: bisect_left(tiers, request.tier)]
        candidates: list[Victim] = []
        for workload in workloads:
            if len(candidates) == MAX_CANDIDATES:
                break  # the victim search only ever tries the cheapest ones
            reason = self._victim_reason(
                request, workload, may_reclaim=may_reclaim, owned_pools=owned_pools
            )
            if reason is not None and any(p.node in eligible_names for p in workload.placements):
                candidates.append(Victim(workload=workload, reason=reason))
        if not candidates:
            return None
        shape = self._shape(request, demand, replicas)
        # The same gang against the same victims and the same cluster fails the same way.
        attempt = (
            self._version,
            id(eligible),
            shape,
            frozenset((v.workload.request.id, v.reason) for v in candidates),
        )
        if attempt in self._hopeless:
            return None
        chosen = choose_victims(
            cluster=self.cluster,
            candidates=candidates,
            now=self.now,
            place=lambda victims: (
                self._place(request, shape, eligible)
                if not within_own_quota
                or self._quota_allows_without(request, gpu_class, replicas, victims)
                else None
            ),
            could_fit=lambda: self._could_fit(shape, eligible),
        )
        if chosen is None:
            self._hopeless.add(attempt)
            return None
        victims, placements = chosen
        for victim in victims:
            evicted = victim.workload
            self.ledger.charge(
                request=evicted.request,
                gpu_class=evicted.gpu_class,
                replicas=len(evicted.placements),
                sign=-1,
            )
            del self.running[evicted.request.id]
            self._count_pool_usage(evicted, sign=-1)
            self._forget_evicted(evicted)
            self._changed()
            self.protected.add(evicted.request.id)
            self.preemptions.append(
                Preemption(
                    victim_id=evicted.request.id,
                    preemptor_id=request.id,
                    reason=victim.reason,
                    message=_preemption_message(victim, request, gpu_class),
                )
            )
        if within_own_quota:
            borrowed = self.ledger.check(
                request=request, gpu_class=gpu_class, replicas=len(placements)
            ).borrowed
        return self._record(request, gpu_class, placements, borrowed)

    def _could_fit(self, shape: GangShape, among: np.ndarray) -> bool:
        """Whether ``among`` has room for the gang's minimum on the cluster as it is now (a
        trial's too): necessary for ``_place`` to succeed, and far cheaper."""
        capacity = gang_capacity(cluster=self.cluster, shape=shape, among=among)
        return int(capacity.sum()) >= shape.min_replicas

    # -- explanations ----------------------------------------------------------------------

    def _diagnose(
        self,
        request: Request,
        gpu_class: str,
        shape: GangShape,
        eligible: np.ndarray,
        reserved_note: str | None,
        shadow: _Shadow | None,
    ) -> _Failure:
        label = gpu_class or "CPU"
        if shadow is not None or reserved_note is not None:
            unrestricted = self._place_settled(request, shape, eligible)
            if unrestricted is not None:
                for placement in unrestricted:
                    self.cluster.release(placement)
                if shadow is not None:
                    return _Failure(
                        PendingCode.PRIORITY,
                        f"{label}: waiting behind higher-priority {shadow.request_id}, planned"
                        f" to start at {shadow.starts_at.isoformat()}; this workload's max"
                        " runtime would delay it.",
                        gpu_class,
                    )
                return _Failure(PendingCode.RESERVATION, reserved_note or "", gpu_class)
        fitting = self.settled.gang_room(shape=shape, among=eligible)
        free = self.settled.free_gpus(among=eligible, shared=shape.demand.is_shared)
        code, text = capacity_shortfall(shape=shape, gpu_class=label, fitting=fitting, free=free)
        return _Failure(code, text, gpu_class)

    def _explain(self, failures: list[tuple[Request, _Failure]]) -> list[PendingReason]:
        # Admissions are over: capacity and releases stay fixed while estimates are made.
        self._idle: dict[int, int] = {}
        self._profiles: dict[str, tuple[list[datetime], np.ndarray]] = {}
        self._releases_by_tenant: dict[str, dict[str, list[RunningWorkload]]] = {}
        reasons = []
        ahead: Counter[str] = Counter()
        for position, (request, failure) in enumerate(failures, start=1):
            need = request.gpu_milli_per_replica * request.smallest_gang
            estimate = self._estimate(request, failure, ahead[failure.gpu_class] + need)
            if failure.code in CAPACITY_CODES or failure.code == PendingCode.PRIORITY:
                ahead[failure.gpu_class] += need
            reasons.append(
                PendingReason(
                    request_id=request.id,
                    code=failure.code.value,
                    message=failure.message,
                    queue_position=position,
                    estimated_start=estimate,
                )
            )
        return reasons

    def _estimate(self, request: Request, failure: _Failure, needed: int) -> datetime | None:
        """``squeue --start``-like: when releases from max runtimes free enough for the work
        queued ahead in the same class plus this one (None: no estimate)."""
        shadow = self.shadows.get(failure.gpu_class)
        if shadow is not None and shadow.request_id == request.id:
            return shadow.starts_at
        if failure.code == PendingCode.QUOTA:
            quota = self.ledger.quota(tenant=request.tenant, gpu_class=failure.gpu_class)
            if quota is None:
                return None
            used = self.ledger.tenant_usage[(request.tenant, failure.gpu_class)]
            excess = used + request.gpu_milli_per_replica * request.smallest_gang
            # Without a cohort there is nothing to borrow: the guarantee is the ceiling.
            excess -= (quota.limit if quota.cohort else quota.guarantee) * MILLI_PER_GPU
            for workload in self._tenant_releases(request.tenant, failure.gpu_class):
                excess -= workload.request.gpu_milli_per_replica * len(workload.placements)
                if excess <= 0:
                    return workload.expected_end
            return None
        if failure.code not in CAPACITY_CODES and failure.code != PendingCode.PRIORITY:
            return None
        eligible, _ = self._eligible(request, failure.gpu_class)
        free = self._idle.get(id(eligible))
        if free is None:
            free = self._idle[id(eligible)] = self.cluster.idle_gpu_milli(eligible)
        ends, released = self._release_profile(failure.gpu_class)
        first = int(np.searchsorted(released, needed - free))
        if first >= len(ends):
            return None
        return max(ends[first], shadow.starts_at if shadow else self.now)

    def _tenant_releases(self, tenant: str, gpu_class: str) -> list[RunningWorkload]:
        """``_releases`` of one tenant (grouped once per class: releases are fixed by now)."""
        by_tenant = self._releases_by_tenant.get(gpu_class)
        if by_tenant is None:
            by_tenant = self._releases_by_tenant[gpu_class] = defaultdict(list)
            for workload in self._releases(gpu_class):
                by_tenant[workload.request.tenant].append(workload)
        return by_tenant.get(tenant, [])

    def _release_profile(self, gpu_class: str) -> tuple[list[datetime], np.ndarray]:
        """End times of running work and the GPU milli released by each of them, cumulated."""
        profile = self._profiles.get(gpu_class)
        if profile is None:
            releases = self._releases(gpu_class)
            amounts = [w.request.gpu_milli_per_replica * len(w.placements) for w in releases]
            ends = [w.expected_end for w in releases if w.expected_end is not None]
            profile = self._profiles[gpu_class] = (ends, np.cumsum(amounts, dtype=np.int64))
        return profile


def _preemption_message(victim: Victim, request: Request, gpu_class: str) -> str:
    other = victim.workload.request
    match victim.reason:
        case "priority":
            return (
                f"Evicted for {request.id} (tier {request.tier} over tier {other.tier})"
                f" on {gpu_class}."
            )
        case "reclaim":
            return (
                f"{other.tenant} was borrowing {gpu_class} beyond its guarantee;"
                f" {request.tenant} reclaimed it for {request.id}."
            )
        case _:
            return (
                f"Capacity on {gpu_class} is reserved for {request.tenant}; {request.id} needs it."
            )
