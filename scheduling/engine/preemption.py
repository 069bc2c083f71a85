"""Choosing whom to evict so that a pending gang fits: which running work a request may
evict (lower tier, reclaimed borrowing, its own reservation) and the cheapest victim set."""

from __future__ import annotations

import functools
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

from .explain import CAPACITY_CODES, PendingCode
from .free_capacity import ClusterState, Demand
from .gang import GangShape
from .model import Preemption, ReplicaPlacement, Request, Reservation, RunningWorkload
from .quota import QuotaLedger
from .reservations import ReservationBook
from .victims import Victim, choose_victims, eviction_cost
from .weighing import WeighedVictims

# Waiting for these reasons, a request may try to evict lower-priority work.
PREEMPTION_CODES = CAPACITY_CODES | {PendingCode.RESERVATION, PendingCode.QUOTA}


@dataclass(frozen=True)
class _Standing:
    """What of a running workload's standing as a victim depends on it alone, not on who would
    evict it: whether its tier's contract lets it go at all, the quota resource it counts
    against, whether it may be reclaimed (borrowed, and run long enough), the share its
    tenant would keep without it, and the pools it runs in."""

    evictable: bool
    resource: str
    reclaimable: bool
    share_left: float
    pools: frozenset[str]


class Preemptor:
    """The victim search of one cycle, and the preemptions it decided.

    Work the cycle admitted or evicted is protected: never a victim (again). Which running
    work may be evicted is worked out once per GPU class and then only loses what is evicted.
    """

    def __init__(
        self,
        *,
        cluster: ClusterState,
        ledger: QuotaLedger,
        reservations: ReservationBook,
        running: Mapping[str, RunningWorkload],
        now: datetime,
        reclaim_after: timedelta,
        eligible: Callable[[Request, str], np.ndarray],
        place: Callable[[Request, GangShape, np.ndarray], tuple[ReplicaPlacement, ...] | None],
        stop: Callable[[RunningWorkload], None],
    ) -> None:
        """``running``: the cycle's, as it admits and evicts; ``eligible``: the nodes a request
        may use on a GPU class, one array per answer held to the end of the cycle (memos key
        on its id); ``place``: the cycle's gang placement on node indices; ``stop``: the
        cycle's bookkeeping for an evicted workload."""
        self._cluster = cluster
        self._ledger = ledger
        self._reservations = reservations
        self._running = running
        self._now = now
        self._reclaim_after = reclaim_after
        self._eligible = eligible
        self._place = place
        self._stop = stop
        self.preemptions: list[Preemption] = []
        # Searches that weighed victims by fair share, which moves every cycle: a parked
        # answer never comes of one.
        self.share_searches = 0
        self._protected: set[str] = set()
        self._names: dict[int, set[str]] = {}
        self._evictable: dict[str, tuple[list[int], list[RunningWorkload]]] = {}
        self._own_evictable: dict[tuple[str, str], list[RunningWorkload]] = {}
        self._hopeless: set[tuple] = set()  # failed searches, until the cluster changes
        # Victim candidates by everything they depend on, until running work changes: ten
        # thousand waiting requests share a few hundred (tenant, tier) keys.
        self._candidates: dict[tuple, list[Victim]] = {}
        # Each victim's own standing, and the victims weighed for each kind of request, until
        # running work changes: the searches of ten thousand waiting requests weigh the same
        # few hundred running workloads.
        self._standings: dict[str, _Standing] = {}
        self._weighed: dict[tuple, WeighedVictims] = {}

    def protect(self, request_id: str) -> None:
        self._protected.add(request_id)
        self._candidates.clear()
        self._weighed.clear()

    def changed(self) -> None:
        """Running work changed (an admission, an eviction): failed searches may succeed."""
        self._hopeless.clear()
        self._candidates.clear()
        self._standings.clear()
        self._weighed.clear()

    def preempt_for(
        self, request: Request, demand: Demand, gpu_class: str
    ) -> tuple[tuple[ReplicaPlacement, ...], bool] | None:
        """Evict the cheapest victims that let the request's gang fit: its placements and
        whether it borrows quota; None (and no eviction) if no victims do."""
        tiers, workloads = self._by_tier(gpu_class)
        if not workloads:
            return None
        eligible = self._eligible(request, gpu_class)
        replicas, verdict = self._ledger.most_replicas(request=request, gpu_class=gpu_class)
        borrowed = verdict.borrowed
        # Refused by its quota, a tenant may still evict its own lower-tier work (as Kueue's
        # withinClusterQueue: LowerPriority), and, when everything lendable is lent out, others'
        # borrowed work beyond its fair share: those victims must free the quota too.
        quota_bound = not replicas
        fair = verdict.borrowed or verdict.lent_out
        lent_out = verdict.lent_out
        if quota_bound:
            if not verdict.lent_out:
                workloads = self._own_lower_tier(request, gpu_class)
            replicas = request.smallest_gang
        if not workloads or not len(eligible):
            return None
        eligible_names = self._names.get(id(eligible))
        if eligible_names is None:
            eligible_names = {self._cluster.nodes[i].name for i in eligible.tolist()}
            self._names[id(eligible)] = eligible_names
        resource = request.quota_resource(gpu_class)
        quota = self._ledger.quota(tenant=request.tenant, resource=resource)
        verdict = self._ledger.check(
            request=request, gpu_class=gpu_class, replicas=request.smallest_gang
        )
        # Reclaiming a guarantee needs a request that stays within it.
        may_reclaim = bool(quota and verdict.allowed and not verdict.borrowed)
        owned_pools = self._reservations.owned_pools(request, gpu_class)
        if not may_reclaim and not owned_pools and not quota_bound:
            # Only lower tiers, or the same tier for a fair-share reclaim.
            workloads = workloads[: (bisect_right if fair else bisect_left)(tiers, request.tier)]
            if not workloads:
                return None
        fair_need = request.quota_amount * replicas if fair else 0
        if fair_need:
            self.share_searches += 1
        key = (
            request.tenant,
            request.tier,
            gpu_class,
            may_reclaim,
            frozenset(owned_pools),
            quota_bound,
            fair_need,
            id(eligible),
        )
        candidates = None if request.evicted_by else self._candidates.get(key)
        if candidates is None:
            # The victims weighed for every request of this kind (the key but for how much it
            # would borrow, with its quota resource and the work it weighs): each only once,
            # as far as asked.
            kind = (*key[:-2], bool(fair_need), key[-1], resource, lent_out)
            weighed = None if request.evicted_by else self._weighed.get(kind)
            if weighed is None:
                weighed = WeighedVictims(
                    workloads=iter(workloads),
                    weigh=functools.partial(
                        self._weigh,
                        request,
                        resource=resource,
                        may_reclaim=may_reclaim,
                        owned_pools=owned_pools,
                        fair=bool(fair_need),
                        eligible_names=eligible_names,
                    ),
                )
                if not request.evicted_by:
                    self._weighed[kind] = weighed
            # What the request's tenant would borrow with it, by weight (fair-share reclaim).
            share_after = (
                self._ledger.lent_share(tenant=request.tenant, resource=resource, extra=fair_need)
                if fair_need
                else None
            )
            candidates = weighed.candidates(share_after)
            if not request.evicted_by:
                self._candidates[key] = candidates
        if not candidates:
            return None
        shape = GangShape.of(request, demand, replicas)
        # The same gang against the same victims and the same cluster fails the same way.
        attempt = (
            id(eligible),
            shape,
            frozenset((v.workload.request.id, v.reason) for v in candidates),
        )
        if attempt in self._hopeless:
            return None

        def place(victims: Sequence[Victim]) -> tuple[ReplicaPlacement, ...] | None:
            if quota_bound and not self._quota_allows_without(
                request, gpu_class, replicas, victims
            ):
                return None
            if not self._closer_shares(request, resource, replicas, victims):
                return None
            return self._place(request, shape, eligible)

        chosen = choose_victims(
            cluster=self._cluster,
            candidates=candidates,
            now=self._now,
            place=place,
            shape=shape,
            among=eligible,
        )
        if chosen is None:
            self._hopeless.add(attempt)
            return None
        victims, placements = chosen
        for victim in victims:
            self._evict(victim, request, gpu_class)
        if quota_bound:
            borrowed = self._ledger.check(
                request=request, gpu_class=gpu_class, replicas=len(placements)
            ).borrowed
        return placements, borrowed

    def _evict(self, victim: Victim, request: Request, gpu_class: str) -> None:
        self._record(
            victim.workload,
            Preemption(
                victim_id=victim.workload.request.id,
                preemptor_id=request.id,
                reason=victim.reason,
                message=_preemption_message(victim, request, gpu_class),
            ),
        )

    def drain_reservations(self) -> None:
        """Empty the capacity of reservations about to open of others' preemptible work,
        cheapest to evict first, until their pool has the GPUs they hold idle."""
        for reservation in self._reservations.draining:
            guests = iter(
                sorted(
                    (
                        w
                        for w in self._running.values()
                        if not reservation.holds_for(w.request)
                        and w.request.preemptible
                        and w.gpu_class == reservation.gpu_class
                        and reservation.same_resource(w.request)
                        and self._reservations.in_pool(w, reservation.pool)
                    ),
                    key=lambda w: eviction_cost(workload=w, now=self._now),
                )
            )
            while self._reservations.shortfall(reservation):
                guest = next(guests, None)
                if guest is None:
                    break
                self.drain(guest, reservation)

    def drain(self, workload: RunningWorkload, reservation: Reservation) -> None:
        """Evict ``workload`` from capacity ``reservation`` needs when its window opens."""
        for placement in workload.placements:
            self._cluster.release(placement)
        self._record(
            workload,
            Preemption(
                victim_id=workload.request.id,
                preemptor_id=None,
                reason="reservation",
                message=f"{reservation.unit.capitalize()} of {reservation.gpu_class} in pool"
                f" {reservation.pool} are"
                f" reserved for {reservation.tenant} from {reservation.starts_at.isoformat()};"
                " they are freed ahead of the window.",
                reservation_id=reservation.id,
            ),
        )

    def _record(self, evicted: RunningWorkload, preemption: Preemption) -> None:
        self._stop(evicted)
        self._forget_evicted(evicted)
        self.protect(evicted.request.id)
        self.preemptions.append(preemption)

    def _weigh(
        self,
        request: Request,
        victim: RunningWorkload,
        *,
        resource: str,
        may_reclaim: bool,
        owned_pools: set[str],
        fair: bool,
        eligible_names: set[str],
    ) -> tuple[str | None, float | None] | None:
        """Why ``request`` may evict ``victim``, if it may: the reason whatever the request
        would borrow, and, where a fair-share reclaim comes first when ``fair`` (the request
        borrows), the lent share up to which the request's tenant may take it back. None for
        a victim it may never evict, or that runs on no node the request may use.
        ``resource``: what the request counts against on the victim's GPU class."""
        weighed = self._reason(
            request,
            victim,
            resource=resource,
            may_reclaim=may_reclaim,
            owned_pools=owned_pools,
            fair=fair,
        )
        if weighed is None or not any(p.node in eligible_names for p in victim.placements):
            return None
        return weighed

    def _reason(
        self,
        request: Request,
        victim: RunningWorkload,
        *,
        resource: str,
        may_reclaim: bool,
        owned_pools: set[str],
        fair: bool,
    ) -> tuple[str | None, float | None] | None:
        """``_weigh`` on any node (where the victim runs is checked last: it costs most)."""
        other = victim.request
        if other.id in request.evicted_by or other.id in self._protected:
            return None
        standing = self._standing(victim)
        # The victim's tier contract: a minimum run time, and a cap on its evictions.
        if not standing.evictable:
            return None
        if other.preemptible and other.tier < request.tier:
            return "priority", None
        if other.tenant == request.tenant:
            return None
        share_left = None
        if standing.reclaimable and resource == standing.resource:
            if may_reclaim and self._lent_to(other.tenant, request.tenant, resource):
                return "reclaim", None
            if fair and other.tier <= request.tier:
                share_left = standing.share_left
        reason = None
        if other.preemptible and owned_pools and not standing.pools.isdisjoint(owned_pools):
            reason = "reservation"
        if reason is None and share_left is None:
            return None
        return reason, share_left

    def _standing(self, victim: RunningWorkload) -> _Standing:
        standing = self._standings.get(victim.request.id)
        if standing is None:
            other = victim.request
            resource = other.quota_resource(victim.gpu_class)
            borrowing = self._ledger.is_borrowing(tenant=other.tenant, resource=resource)
            # Preemptible work is reclaimed from a tenant that borrows; work whose tier is not
            # preemptible only if it was itself admitted on borrowed capacity and its tenant
            # still holds more than its guarantee.
            reclaimable = (
                victim.borrowed or borrowing if other.preemptible else victim.borrowed and borrowing
            )
            ran = self._now - victim.started_at
            index = self._cluster.index
            standing = self._standings[other.id] = _Standing(
                evictable=ran >= other.min_run_time
                and (other.max_evictions is None or other.evictions < other.max_evictions),
                resource=resource,
                reclaimable=bool(reclaimable) and ran >= self._reclaim_after,
                share_left=self._ledger.lent_share(
                    tenant=other.tenant,
                    resource=resource,
                    extra=-other.quota_amount * len(victim.placements),
                ),
                pools=frozenset(
                    self._cluster.nodes[index[p.node]].pool
                    for p in victim.placements
                    if p.node in index
                ),
            )
        return standing

    def _lent_to(self, borrower: str, lender: str, resource: str) -> bool:
        """Whether ``borrower`` may be holding what ``lender`` is guaranteed: they share a
        cohort, or someone borrows from the shared pool, which guarantees were carved from."""
        mine = self._ledger.quota(tenant=lender, resource=resource)
        theirs = self._ledger.quota(tenant=borrower, resource=resource)
        if not mine or not theirs:
            return False
        return (
            bool(mine.cohort and mine.cohort == theirs.cohort) or self._ledger.drawn(resource) > 0
        )

    def _closer_shares(
        self, request: Request, resource: str, replicas: int, victims: Sequence[Victim]
    ) -> bool:
        """A fair-share reclaim moves shares closer and never past each other: afterwards
        every tenant that loses work still borrows at least the share the request's tenant
        then borrows (by weight)."""
        freed: Counter[str] = Counter()
        for victim in victims:
            workload = victim.workload
            amount = workload.request.quota_amount * len(workload.placements)
            if victim.reason == "fair-share" or workload.request.tenant == request.tenant:
                freed[workload.request.tenant] += amount
        losers = [tenant for tenant in freed if tenant != request.tenant]
        if not losers:
            return True
        extra = request.quota_amount * replicas - freed[request.tenant]
        after = self._ledger.lent_share(tenant=request.tenant, resource=resource, extra=extra)
        return all(
            after <= self._ledger.lent_share(tenant=tenant, resource=resource, extra=-freed[tenant])
            for tenant in losers
        )

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
                    for w in self._running.values()
                    if w.gpu_class == gpu_class and w.request.id not in self._protected
                ),
                key=lambda w: eviction_cost(workload=w, now=self._now),
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
        return [w for w in own if w.request.tier < request.tier and w.request.id in self._running]

    def _quota_allows_without(
        self, request: Request, gpu_class: str, replicas: int, victims: Sequence[Victim]
    ) -> bool:
        for victim in victims:
            self._ledger.charge(
                request=victim.workload.request,
                gpu_class=victim.workload.gpu_class,
                replicas=len(victim.workload.placements),
                sign=-1,
            )
        try:
            return self._ledger.check(
                request=request, gpu_class=gpu_class, replicas=replicas
            ).allowed
        finally:
            for victim in victims:
                self._ledger.charge(
                    request=victim.workload.request,
                    gpu_class=victim.workload.gpu_class,
                    replicas=len(victim.workload.placements),
                )


def _preemption_message(victim: Victim, request: Request, gpu_class: str) -> str:
    other = victim.workload.request
    match victim.reason:
        case "priority":
            return (
                f"Evicted for {request.id} (tier {request.tier} over tier {other.tier})"
                f" on {gpu_class}."
            )
        case "fair-share":
            return (
                f"{other.tenant} held more than its fair share of lent {gpu_class};"
                f" {request.tenant}, below its share, took it back for {request.id}."
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
