"""Reserved capacity: whole GPUs of a class in a pool held for one tenant (or one of its
projects), which others' non-preemptible work may not take while the owner leaves them unused,
nor before the window opens unless its maximum run time ends first. In the lead time before a
window, the capacity is also drained of others' preemptible work and kept free of new
preemptible work, so that it is idle when the window opens."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

import numpy as np

from .capacity import SettledCapacity
from .free_capacity import ClusterState
from .model import MILLI_PER_GPU, Request, Reservation, RunningWorkload, mig_profile_milli


class ReservationBook:
    """The reservations active in a cycle and how much of them their owners use, kept up to
    date as the cycle starts and stops work."""

    def __init__(
        self,
        *,
        reservations: Sequence[Reservation],
        now: datetime,
        cluster: ClusterState,
        settled: SettledCapacity,
        running: Iterable[RunningWorkload],
        lead_time: timedelta,
    ) -> None:
        """``lead_time``: how long before its window a reservation without one drains."""
        self._now = now
        self._reservations = [r for r in reservations if r.is_active(now=now)]
        self._upcoming = [r for r in reservations if r.starts_at > now]
        self._draining = [
            r for r in self._upcoming if r.starts_at - (r.lead_time or lead_time) <= now
        ]
        self._cluster = cluster
        self._settled = settled
        self._pools = np.array([n.pool for n in cluster.nodes])
        self._classes = np.array([n.gpu_class for n in cluster.nodes])
        # GPU milli (or MIG instances) run per (tenant, project or None for the whole tenant,
        # class, pool, MIG profile or None).
        self._usage: Counter[tuple[str, str | None, str, str, str | None]] = Counter()
        for workload in running:
            self.started(workload)

    def started(self, workload: RunningWorkload) -> None:
        self._count(workload, sign=1)

    def stopped(self, workload: RunningWorkload) -> None:
        self._count(workload, sign=-1)

    def owned_pools(self, request: Request, gpu_class: str | None = None) -> set[str]:
        """Pools of the open reservations held for ``request`` (of ``gpu_class``, if given)."""
        return {
            r.pool
            for r in self._reservations
            if r.holds_for(request)
            and r.same_resource(request)
            and (gpu_class is None or r.gpu_class == gpu_class)
        }

    def outside(
        self, request: Request, gpu_class: str, among: np.ndarray, need: int
    ) -> tuple[np.ndarray, str | None]:
        """Drop pools whose idle GPUs (or, for a MIG request, instances of its profile) are
        held for others, with a note naming them if any were dropped; ``need``: the GPUs or
        instances the request takes. Preemptible work is kept only off capacity being drained
        for a window about to open (it would be evicted again before the window)."""
        holding = self._holding(request, gpu_class)
        held = self._held(holding)
        profile = request.mig_profile if request.mig_count else None
        idle = self._idle(among, profile) if held else {}
        blocked = [pool for pool, amount in held.items() if idle.get(pool, 0) - need < amount]
        if not blocked:
            return among, None
        holders = [r for r in holding if r.pool in blocked]
        owners = ", ".join(sorted({r.tenant for r in holders}))
        opens = min(r.starts_at for r in holders)
        when = f" from {opens.isoformat()}" if opens > self._now else ""
        if request.preemptible:
            allowed = "they are kept free for the window; only work that ends before then"
        else:
            allowed = "only preemptible work" + (" or work that ends before then" if when else "")
        unit = holders[0].unit
        note = (
            f"{gpu_class}: {sum(held[p] for p in blocked)} {unit} in pool {', '.join(blocked)}"
            f" are reserved for {owners}{when}; {allowed} may use them."
        )
        return among[~np.isin(self._pools[among], blocked)], note

    def _holding(self, request: Request, gpu_class: str) -> list[Reservation]:
        """Other tenants' reservations of ``gpu_class`` that hold capacity against the request:
        against non-preemptible work, those open now and those opening before its maximum run
        time would end (all of them when it has none); against preemptible work, only those
        draining for their window, likewise."""
        runtime = request.max_runtime
        ends = self._now + runtime if runtime is not None else None
        if request.preemptible:
            candidates = self._draining
        else:
            candidates = [*self._reservations, *self._upcoming]
        return [
            r
            for r in candidates
            if r.gpu_class == gpu_class
            and r.same_resource(request)
            and not r.holds_for(request)
            and (r.is_active(now=self._now) or ends is None or ends > r.starts_at)
        ]

    def after_windows(
        self, request: Request, gpu_class: str, start: datetime, *, need: int, capacity: int
    ) -> datetime:
        """When non-preemptible ``request`` could start, at ``start`` or later, given other
        tenants' windows of ``gpu_class``: a window its run would overlap (all of them when it
        has no maximum run time) and that leaves less than ``need`` milli-GPU of the
        ``capacity`` it could use puts the start off to the window's end."""
        if request.preemptible:
            return start
        windows = sorted(
            (
                r
                for r in (*self._reservations, *self._upcoming)
                if r.gpu_class == gpu_class
                and r.same_resource(request)
                and not r.holds_for(request)
            ),
            key=lambda r: r.starts_at,
        )
        for window in windows:
            ends = start + request.max_runtime if request.max_runtime is not None else None
            overlaps = start < window.ends_at and (ends is None or ends > window.starts_at)
            each = mig_profile_milli(window.mig_profile) if window.mig_profile else MILLI_PER_GPU
            if overlaps and need > capacity - window.gpus * each:
                start = window.ends_at
        return start

    @property
    def draining(self) -> list[Reservation]:
        """Reservations in the lead time before their window."""
        return self._draining

    def shortfall(self, reservation: Reservation) -> int:
        """How many fewer GPUs (or instances) of its kind its pool has idle than the
        reservation holds unused (0: none): what others' work must free before the window."""
        among = self.class_nodes(reservation.gpu_class)
        idle = self._idle(among, reservation.mig_profile).get(reservation.pool, 0)
        return max(self._held([reservation]).get(reservation.pool, 0) - idle, 0)

    def _idle(self, among: np.ndarray, mig_profile: str | None) -> dict[str, int]:
        """Idle whole GPUs, or free instances of ``mig_profile``, of the nodes ``among`` per
        pool."""
        if mig_profile is None:
            return self._settled.idle_by_pool(among=among)
        free = self._cluster.mig_free.get(mig_profile)
        idle: Counter[str] = Counter()
        if free is not None:
            for node in among:
                idle[str(self._pools[node])] += int(free[node])
        return idle

    def class_nodes(self, gpu_class: str) -> np.ndarray:
        return np.flatnonzero(self._classes == gpu_class)

    def in_pool(self, workload: RunningWorkload, pool: str) -> bool:
        return any(
            self._pools[node] == pool
            for p in workload.placements
            if (node := self._cluster.index.get(p.node)) is not None
        )

    def _held(self, holding: Iterable[Reservation]) -> dict[str, int]:
        """Per pool, whole GPUs (or MIG instances) that these reservations hold and their
        owners leave unused."""
        unused: Counter[tuple[str, int]] = Counter()
        for r in holding:
            key = (r.tenant, r.project, r.gpu_class, r.pool, r.mig_profile)
            each = 1 if r.mig_profile else MILLI_PER_GPU
            unused[(r.pool, each)] += max(r.gpus * each - self._usage[key], 0)
        held: Counter[str] = Counter()
        for (pool, each), amount in unused.items():
            held[pool] += amount // each
        return {pool: amount for pool, amount in held.items() if amount}

    def _count(self, workload: RunningWorkload, *, sign: int) -> None:
        """Count the workload's GPU milli (or MIG instances) as its project's and as its
        tenant's (project None), what project and organization reservations compare with."""
        request = workload.request
        for placement in workload.placements:
            node = self._cluster.index.get(placement.node)
            if node is not None:
                pool = self._cluster.nodes[node].pool
                if placement.mig_count:
                    profile, amount = placement.mig_profile, placement.mig_count
                else:
                    profile, amount = None, placement.gpu_milli * len(placement.gpu_indices)
                for project in {request.project, None}:
                    key = (request.tenant, project, workload.gpu_class, pool, profile)
                    self._usage[key] += sign * amount
