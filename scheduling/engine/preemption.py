"""Choosing whom to evict so that a pending gang fits: which running work a request may
evict (lower tier, reclaimed borrowing, its own reservation) and the cheapest victim set."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

from .explain import CAPACITY_CODES, PendingCode
from .free_capacity import ClusterState, Demand
from .gang import GangShape, gang_capacity
from .model import Preemption, ReplicaPlacement, Request, RunningWorkload
from .quota import QuotaLedger
from .reservations import ReservationBook

MAX_CANDIDATES = 32  # bounds the search; the cheapest victims come first anyway
# Waiting for these reasons, a request may try to evict lower-priority work.
PREEMPTION_CODES = CAPACITY_CODES | {PendingCode.RESERVATION, PendingCode.QUOTA}


@dataclass(frozen=True)
class Victim:
    workload: RunningWorkload
    reason: str


def eviction_cost(*, workload: RunningWorkload, now: datetime) -> tuple[int, float, str]:
    """Lowest tier first, then least work lost (GPU-milli x seconds run), then by id."""
    elapsed = max((now - workload.started_at).total_seconds(), 0.0)
    gpu_milli = workload.request.gpu_milli_per_replica * len(workload.placements)
    return workload.request.tier, gpu_milli * elapsed, workload.request.id


def choose_victims(
    *,
    cluster: ClusterState,
    candidates: Sequence[Victim],
    now: datetime,
    place: Callable[[Sequence[Victim]], tuple[ReplicaPlacement, ...] | None],
    could_fit: Callable[[], bool],
) -> tuple[list[Victim], tuple[ReplicaPlacement, ...]] | None:
    """The smallest-cost set of ``candidates`` whose eviction lets ``place(victims)`` succeed
    (``place`` sees the victims, so that it can also ask whether they free enough quota).

    Victims are added in cost order until the gang fits, then each one that turns out not to
    be needed is dropped again (most expensive first). On success the cluster holds the
    gang's placements with the victims' capacity released; on failure it is unchanged.

    ``could_fit()`` is a cheap test that ``place()`` cannot succeed without. Free capacity
    only grows with more victims, so if the cheapest victim alone is not enough and the test
    fails with every candidate evicted, no victim set helps: the search stops there.
    """
    ranked = sorted(candidates, key=lambda v: eviction_cost(workload=v.workload, now=now))
    ranked = ranked[:MAX_CANDIDATES]
    saved = cluster.checkpoint()

    def evict(victim: Victim) -> None:
        for placement in victim.workload.placements:
            cluster.release(placement)

    def release(victims: Sequence[Victim]) -> None:
        cluster.restore(saved)
        for victim in victims:
            evict(victim)

    def attempt(victims: Sequence[Victim]) -> tuple[ReplicaPlacement, ...] | None:
        release(victims)
        return place(victims)

    def hopeless() -> bool:
        release(ranked)
        verdict = not could_fit()
        release(chosen)
        return verdict

    chosen: list[Victim] = []
    for victim in ranked:
        # A failed place() leaves the cluster as it was: holding exactly the victims chosen
        # so far released, so one more victim is one more release.
        chosen.append(victim)
        evict(victim)
        if place(chosen) is not None:
            break
        if len(chosen) == 1 and len(ranked) > 1 and hopeless():
            cluster.restore(saved)
            return None
    else:
        cluster.restore(saved)
        return None
    for victim in reversed(chosen[:-1]):
        trimmed = [v for v in chosen if v is not victim]
        if attempt(trimmed) is not None:
            chosen = trimmed
    placements = attempt(chosen)
    assert placements is not None, "a victim set that fitted no longer fits"
    return chosen, placements


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
        self._protected: set[str] = set()
        self._names: dict[int, set[str]] = {}
        self._evictable: dict[str, tuple[list[int], list[RunningWorkload]]] = {}
        self._own_evictable: dict[tuple[str, str], list[RunningWorkload]] = {}
        self._hopeless: set[tuple] = set()  # failed searches, until the cluster changes
        # Victim candidates by everything they depend on, until running work changes: ten
        # thousand waiting requests share a few hundred (tenant, tier) keys.
        self._candidates: dict[tuple, list[Victim]] = {}

    def protect(self, request_id: str) -> None:
        self._protected.add(request_id)
        self._candidates.clear()

    def changed(self) -> None:
        """Running work changed (an admission, an eviction): failed searches may succeed."""
        self._hopeless.clear()
        self._candidates.clear()

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
            eligible_names = {self._cluster.nodes[i].name for i in eligible.tolist()}
            self._names[id(eligible)] = eligible_names
        quota = self._ledger.quota(tenant=request.tenant, gpu_class=gpu_class)
        verdict = self._ledger.check(
            request=request, gpu_class=gpu_class, replicas=request.smallest_gang
        )
        # Reclaiming needs a cohort and a request that stays within its own guarantee.
        may_reclaim = bool(quota and quota.cohort and verdict.allowed and not verdict.borrowed)
        owned_pools = self._reservations.owned_pools(request.tenant, gpu_class)
        if not may_reclaim and not owned_pools and not within_own_quota:
            workloads = workloads[: bisect_left(tiers, request.tier)]
        key = (
            request.tenant,
            request.tier,
            gpu_class,
            may_reclaim,
            frozenset(owned_pools),
            within_own_quota,
            id(eligible),
        )
        candidates = None if request.evicted_by else self._candidates.get(key)
        if candidates is None:
            candidates = []
            for workload in workloads:
                if len(candidates) == MAX_CANDIDATES:
                    break  # the victim search only ever tries the cheapest ones
                reason = self._victim_reason(
                    request, workload, may_reclaim=may_reclaim, owned_pools=owned_pools
                )
                if reason is not None and any(
                    p.node in eligible_names for p in workload.placements
                ):
                    candidates.append(Victim(workload=workload, reason=reason))
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
        chosen = choose_victims(
            cluster=self._cluster,
            candidates=candidates,
            now=self._now,
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
            self._evict(victim, request, gpu_class)
        if within_own_quota:
            borrowed = self._ledger.check(
                request=request, gpu_class=gpu_class, replicas=len(placements)
            ).borrowed
        return placements, borrowed

    def _evict(self, victim: Victim, request: Request, gpu_class: str) -> None:
        evicted = victim.workload
        self._stop(evicted)
        self._forget_evicted(evicted)
        self.protect(evicted.request.id)
        self.preemptions.append(
            Preemption(
                victim_id=evicted.request.id,
                preemptor_id=request.id,
                reason=victim.reason,
                message=_preemption_message(victim, request, gpu_class),
            )
        )

    def _victim_reason(
        self, request: Request, victim: RunningWorkload, *, may_reclaim: bool, owned_pools: set[str]
    ) -> str | None:
        other = victim.request
        if other.id in request.evicted_by or other.id in self._protected:
            return None
        if other.preemptible and other.tier < request.tier:
            return "priority"
        if other.tenant == request.tenant:
            return None
        borrowing = self._ledger.is_borrowing(tenant=other.tenant, gpu_class=victim.gpu_class)
        # Preemptible work is reclaimed from a tenant that borrowed; work whose tier is not
        # preemptible only if it was itself admitted on borrowed capacity and its tenant still
        # holds more than its guarantee.
        reclaimable = (
            victim.borrowed or borrowing if other.preemptible else victim.borrowed and borrowing
        )
        ran_long_enough = self._now - victim.started_at >= self._reclaim_after
        if may_reclaim and reclaimable and ran_long_enough:
            mine = self._ledger.quota(tenant=request.tenant, gpu_class=victim.gpu_class)
            theirs = self._ledger.quota(tenant=other.tenant, gpu_class=victim.gpu_class)
            if mine and theirs and mine.cohort == theirs.cohort:
                return "reclaim"
        if not other.preemptible:
            return None
        if owned_pools and any(
            self._cluster.nodes[self._cluster.index[p.node]].pool in owned_pools
            for p in victim.placements
            if p.node in self._cluster.index
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

    def _could_fit(self, shape: GangShape, among: np.ndarray) -> bool:
        """Whether ``among`` has room for the gang's minimum on the cluster as it is now (a
        trial's too): necessary for placing it to succeed, and far cheaper."""
        capacity = gang_capacity(cluster=self._cluster, shape=shape, among=among)
        return int(capacity.sum()) >= shape.min_replicas


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
