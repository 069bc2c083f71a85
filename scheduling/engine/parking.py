"""Parking, as Kueue's inadmissible workloads: a waiting request's answer kept from one cycle to
the next and reused without deciding the request again, while nothing it could depend on moved.

Exact by construction: an answer is reused only where deciding again would give it, so a cycle
with parking decides what it would without. An answer is kept only when it was made on the
world the cycle read (no admission or eviction before it in that cycle), and reused only

- on the same world: free capacity of every node, the running work, quotas, reservations and
  which of them are open, opening or draining, tenant weights, topology, node shapes, the
  policy and the placement policy's workload mix, and of the running work as victims: its
  order by eviction cost (work lost grows with time) and whether each has run its tier's
  minimum and the reclaim delay (``world_of``), compared whole;
- while the cycle is still on that world (nothing admitted or evicted before it);
- for the same request, behind the same backfill shadows (the queue order, which fair share
  moves with time, only matters through those), and on the same side of every instant its
  maximum runtime is weighed against (a shadow's start, a reservation's window);
- and only for an answer whose victim search, if any, weighed no fair share (a request that
  would borrow is decided every cycle).

Shares and run-time samples are no part of the world: they move every cycle, and only the
order (through the shadows), fair-share reclaims and the estimates, made anew every cycle,
read them. A victim search that fails tries the same sets in the same rank order whatever
the costs (they only prune once a set fits), so the order stands for the costs.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from .model import ClusterSnapshot, Policy, Request, RunningWorkload
from .victims import eviction_cost


@dataclass(frozen=True)
class ParkedAnswer:
    request: Request
    failure: object  # the cycle's reason for it to wait
    shadows: tuple  # the backfill shadows planned before it was decided
    clock: tuple[bool, ...]  # which side of each weighed instant its runtime ended on


@dataclass(frozen=True)
class Parking:
    """A cycle's answers for its waiting requests, and the world they hold in (``world_of``
    of ``inputs``: worked out only when a next cycle compares it)."""

    inputs: Mapping[str, object]
    answers: Mapping[str, ParkedAnswer]

    @functools.cached_property
    def world(self) -> tuple:
        return world_of(**self.inputs)

    def __len__(self) -> int:
        return len(self.answers)


def world_of(
    *,
    snapshot: ClusterSnapshot,
    running: Sequence[RunningWorkload],
    policy: Policy,
    mix: tuple,
    now: datetime,
) -> tuple:
    """Everything a waiting request's answer is made of but the request, the shadows ahead of
    it and its runtime's end (``ParkedAnswer``), in a value compared whole."""
    phases = tuple(
        (
            reservation,
            reservation.is_active(now=now),
            reservation.starts_at > now,
            reservation.starts_at - (reservation.lead_time or policy.reservation_lead_time) <= now,
        )
        for reservation in snapshot.reservations
    )
    victims = sorted(running, key=lambda w: eviction_cost(workload=w, now=now))
    standings = tuple(
        (
            w.request.id,
            now - w.started_at >= w.request.min_run_time,
            now - w.started_at >= policy.reclaim_after,
        )
        for w in victims
    )
    return (
        standings,
        snapshot.nodes,
        tuple(running),
        snapshot.quotas,
        phases,
        tuple(sorted(snapshot.tenant_weights.items())),
        snapshot.topology_levels,
        snapshot.node_shapes,
        policy,
        mix,
    )


class Parker:
    """One cycle's parking: the last cycle's answers it may reuse, and the answers it keeps."""

    def __init__(
        self,
        parked: Parking | None,
        snapshot: ClusterSnapshot,
        running: Sequence[RunningWorkload],
        policy: Policy,
        mix: tuple,
        *,
        now: datetime,
    ) -> None:
        """``running``, as the cycle begins; ``mix``: the placement policy's workload mix."""
        self._inputs = {
            "snapshot": snapshot,
            "running": running,
            "policy": policy,
            "mix": mix,
            "now": now,
        }
        self._reusable = {}
        if parked is not None and parked.world == world_of(**self._inputs):
            self._reusable = parked.answers
        self._now = now
        self._windows = tuple(sorted({r.starts_at for r in snapshot.reservations}))
        self._answers: dict[str, ParkedAnswer] = {}
        self.reused = 0

    def _clock(self, request: Request, shadows: tuple) -> tuple[bool, ...]:
        runtime = request.max_runtime
        if runtime is None:
            return ()
        ends = self._now + runtime
        return tuple(ends <= at for at in (*self._windows, *(s.starts_at for s in shadows)))

    def answer(self, request: Request, shadows: tuple) -> object | None:
        """The parked reason for ``request`` to wait, if it holds now; kept for the next cycle."""
        kept = self._reusable.get(request.id)
        if kept is None or not (kept.request is request or kept.request == request):
            return None
        if kept.shadows != shadows or kept.clock != self._clock(request, shadows):
            return None
        self._answers[request.id] = kept
        self.reused += 1
        return kept.failure

    def park(self, request: Request, failure: object, shadows: tuple) -> None:
        self._answers[request.id] = ParkedAnswer(
            request, failure, shadows, self._clock(request, shadows)
        )

    def parking(self) -> Parking:
        return Parking(inputs=self._inputs, answers=self._answers)
