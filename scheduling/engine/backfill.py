"""EASY-style backfill per GPU class: the first workload blocked on capacity gets a planned
start (its "shadow time", from running workloads' max runtimes) and planned nodes; a later
workload may use those nodes only if its own max runtime ends before."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from .capacity import SettledCapacity
from .free_capacity import ClusterState
from .model import ReplicaPlacement, Request, RunningWorkload


@dataclass(frozen=True)
class Shadow:
    """A blocked head's planned start and the nodes it will need then."""

    request_id: str
    tier: int
    starts_at: datetime
    held: np.ndarray  # one flag per node of the cluster
    # The running work whose end it waits for (by id): the start estimates draw those ends.
    waits_for: tuple[str, ...] = ()

    def as_planned(self, gpu_class: str) -> PlannedShadow:
        return PlannedShadow(
            gpu_class,
            self.request_id,
            self.tier,
            self.starts_at,
            self.waits_for,
            self.held.tobytes(),
        )


@dataclass(frozen=True)
class PlannedShadow:
    """A class's shadow as a value that compares (its held nodes as bytes)."""

    gpu_class: str
    request_id: str
    tier: int
    starts_at: datetime
    waits_for: tuple[str, ...]
    held: bytes


class Backfill:
    """The shadows of one cycle (one per GPU class at most, never replanned) and the order in
    which running work releases its capacity, which they are planned from."""

    def __init__(
        self,
        *,
        cluster: ClusterState,
        settled: SettledCapacity,
        running: Mapping[str, RunningWorkload],
        now: datetime,
    ) -> None:
        self._cluster = cluster
        self._settled = settled
        self._running = running  # the cycle's, as it admits and evicts
        self._now = now
        self._shadows: dict[str, Shadow] = {}
        self._unshadowed: dict[tuple[str, int], np.ndarray] = {}
        self._release_orders: dict[str, list[RunningWorkload]] = {}
        # The shadows planned so far, in order: what a parked answer was decided behind.
        self.planned: tuple[PlannedShadow, ...] = ()

    def changed(self) -> None:
        """Running work changed (an admission, an eviction): release orders are stale."""
        self._release_orders.clear()

    def shadow(self, gpu_class: str) -> Shadow | None:
        return self._shadows.get(gpu_class)

    def adopt(self, gpu_class: str, shadow: Shadow) -> None:
        """Take a shadow planned on this same cluster (this cycle's, or a what-if's heads')."""
        self._shadows[gpu_class] = shadow
        self.planned = (*self.planned, shadow.as_planned(gpu_class))

    def outside_shadow(
        self, request: Request, gpu_class: str, among: np.ndarray
    ) -> tuple[np.ndarray, Shadow | None]:
        """The nodes of ``among`` the request may use without delaying the class's shadow,
        and that shadow if it took any away."""
        shadow = self._shadows.get(gpu_class)
        if shadow is None or shadow.request_id == request.id:
            return among, None
        runtime = request.max_runtime
        if runtime is not None and self._now + runtime <= shadow.starts_at:
            return among, None
        if not self._settled.kept(among):
            return among[~shadow.held[among]], shadow
        # The shadow of a class never changes, so a kept node set loses its nodes only once.
        key = (gpu_class, id(among))
        unshadowed = self._unshadowed.get(key)
        if unshadowed is None:
            unshadowed = self._unshadowed[key] = self._settled.keep(among[~shadow.held[among]])
        return unshadowed, shadow

    def releases(self, gpu_class: str) -> list[RunningWorkload]:
        """Running work with a max runtime, in the order it will end."""
        ordered = self._release_orders.get(gpu_class)
        if ordered is None:
            ending = [
                w
                for w in self._running.values()
                if w.expected_end is not None and (not gpu_class or w.gpu_class == gpu_class)
            ]
            ordered = sorted(ending, key=lambda w: (w.expected_end, w.request.id))
            self._release_orders[gpu_class] = ordered
        return ordered

    def plan(
        self,
        request: Request,
        gpu_class: str,
        place: Callable[[], tuple[ReplicaPlacement, ...] | None],
    ) -> None:
        """Find the earliest release of running work after which the head fits (``place``
        succeeds; binary search over the release order), and hold the nodes it would take."""
        releases = self.releases(gpu_class)
        if not releases:
            return
        saved = self._cluster.checkpoint()
        # The search only probes counts above the largest that did not fit, so each probe
        # releases from that one's cluster onwards instead of from the first release.
        base_count, base = 0, saved

        def fits_after(count: int) -> tuple[ReplicaPlacement, ...] | None:
            nonlocal base_count, base
            self._cluster.restore(base)
            for workload in releases[base_count:count]:
                for placement in workload.placements:
                    self._cluster.release(placement)
            released = self._cluster.checkpoint()
            placements = place()
            if placements is None:
                base_count, base = count, released
            return placements

        low, high = 1, len(releases)
        if fits_after(high) is None:
            self._cluster.restore(saved)
            return
        while low < high:
            middle = (low + high) // 2
            if fits_after(middle) is None:
                low = middle + 1
            else:
                high = middle
        placements = fits_after(low)
        self._cluster.restore(saved)
        assert placements is not None
        held = np.zeros(len(self._cluster), dtype=bool)
        held[[self._cluster.index[p.node] for p in placements]] = True
        starts_at = releases[low - 1].expected_end
        assert starts_at is not None
        waits_for = tuple(w.request.id for w in releases[:low])
        self.adopt(gpu_class, Shadow(request.id, request.tier, starts_at, held, waits_for))
