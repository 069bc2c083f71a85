"""A discrete-event simulation of the portal's queue: arrivals with known run times go through
``schedule`` as cycles would, from one event to the next, on a cluster that starts empty.

Events are arrivals, ends and the moments borrowed work becomes reclaimable (a preemption can
only happen then); a cycle runs at each one while work waits. A preempted workload goes back
to the queue keeping its submit time and runs only what it had left: every arrival's run time
is spent exactly once, however often it is evicted. Pure and deterministic, as the engine is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from .fairness import DecayedUsage, UsageDecay, placement_gpu_milli, usage_shares
from .model import (
    MILLI_PER_GPU,
    ClusterSnapshot,
    NodeState,
    Policy,
    ReplicaPlacement,
    Request,
    RunningWorkload,
)
from .schedule import schedule


@dataclass(frozen=True)
class Arrival:
    request: Request
    # How long it runs once placed (its recorded run time).
    runtime: timedelta


@dataclass(frozen=True)
class Stint:
    """One stretch during which a workload held capacity: from an admission to its end, its
    eviction or the end of the simulated span."""

    request_id: str
    gpu_class: str
    placements: tuple[ReplicaPlacement, ...]
    started_at: datetime
    ended_at: datetime

    @property
    def gpu_milli(self) -> int:
        """Held in all, over every replica."""
        return sum(placement_gpu_milli(p) for p in self.placements)

    @property
    def gpu_seconds(self) -> float:
        return self.gpu_milli / MILLI_PER_GPU * (self.ended_at - self.started_at).total_seconds()


@dataclass(frozen=True)
class Eviction:
    at: datetime
    victim_id: str
    preemptor_id: str | None


@dataclass(frozen=True)
class Simulation:
    stints: tuple[Stint, ...]
    # When each workload that started was first admitted.
    first_starts: Mapping[str, datetime]
    evictions: tuple[Eviction, ...]
    cycles: int


class SimulationTooLarge(Exception):
    """The simulation would run more cycles than it was allowed."""


def nodes_less(
    nodes: Iterable[NodeState], running: Iterable[RunningWorkload]
) -> tuple[NodeState, ...]:
    """The nodes' free capacity once ``running`` holds its placements."""
    by_node: dict[str, list[ReplicaPlacement]] = {}
    for workload in running:
        for placement in workload.placements:
            by_node.setdefault(placement.node, []).append(placement)
    free = []
    for node in nodes:
        held = by_node.get(node.name)
        if not held:
            free.append(node)
            continue
        gpus, mig = list(node.gpu_free_milli), dict(node.mig_free)
        cpu, memory = node.cpu_free_milli, node.memory_free_mib
        for placement in held:
            for index in placement.gpu_indices:
                gpus[index] -= placement.gpu_milli
            if placement.mig_profile:
                mig[placement.mig_profile] = mig.get(placement.mig_profile, 0) - placement.mig_count
            cpu -= placement.cpu_milli
            memory -= placement.memory_mib
        free.append(
            replace(
                node,
                gpu_free_milli=tuple(gpus),
                mig_free=mig,
                cpu_free_milli=cpu,
                memory_free_mib=memory,
            )
        )
    return tuple(free)


class _Run:
    """The simulation's state between events."""

    def __init__(
        self,
        *,
        snapshot: ClusterSnapshot,
        arrivals: Sequence[Arrival],
        policy: Policy,
        decay: UsageDecay | None,
    ):
        self.snapshot, self.policy = snapshot, policy
        self.arrivals = sorted(arrivals, key=lambda a: (a.request.submitted_at, a.request.id))
        self.tenant_of = {a.request.id: a.request.tenant for a in self.arrivals}
        self.decay = decay
        self.past: DecayedUsage | None = None
        self.folded = 0  # stints already added to ``past``
        self.next_arrival = 0
        self.left = {a.request.id: a.runtime for a in self.arrivals}
        self.pending: dict[str, Request] = {}
        self.running: dict[str, tuple[RunningWorkload, datetime]] = {}
        self.stints: list[Stint] = []
        self.first_starts: dict[str, datetime] = {}
        self.evictions: list[Eviction] = []
        self.cycles = 0

    def next_event(self) -> datetime | None:
        times = [end for _, end in self.running.values()]
        if self.next_arrival < len(self.arrivals):
            times.append(self.arrivals[self.next_arrival].request.submitted_at)
        if self.pending:
            # Borrowed work becomes reclaimable: a waiting workload may evict it then.
            times += [
                w.started_at + self.policy.reclaim_after
                for w, _ in self.running.values()
                if w.borrowed and w.started_at + self.policy.reclaim_after > self.now
            ]
        return min(times, default=None)

    def stop(self, request_id: str, *, at: datetime) -> None:
        workload, _ = self.running.pop(request_id)
        self.stints.append(
            Stint(request_id, workload.gpu_class, workload.placements, workload.started_at, at)
        )
        self.left[request_id] -= at - workload.started_at

    def advance(self, now: datetime) -> None:
        self.now = now
        for request_id in sorted(i for i, (_, end) in self.running.items() if end <= now):
            self.stop(request_id, at=now)
        while (
            self.next_arrival < len(self.arrivals)
            and self.arrivals[self.next_arrival].request.submitted_at <= now
        ):
            request = self.arrivals[self.next_arrival].request
            self.pending[request.id] = request
            self.next_arrival += 1
        if self.pending:
            self.cycle()

    def usage(self, running: Sequence[RunningWorkload]) -> dict[str, float]:
        """Each tenant's decayed usage now, as a share: ended stints are added once to the
        totals, running work counts from its start, as the portal's cycle does."""
        assert self.decay is not None
        if self.past is None:
            self.past = DecayedUsage(self.decay, as_of=self.now)
        self.past.advance(self.now)
        for stint in self.stints[self.folded :]:
            self.past.add(
                tenant=self.tenant_of[stint.request_id],
                gpu_milli=stint.gpu_milli,
                gpu_class=stint.gpu_class,
                started_at=stint.started_at,
                ended_at=stint.ended_at,
            )
        self.folded = len(self.stints)
        return usage_shares(
            self.decay,
            past=self.past.totals,
            running=running,
            now=self.now,
        )

    def cycle(self) -> None:
        self.cycles += 1
        running = [w for w, _ in self.running.values()]
        snapshot = replace(self.snapshot, nodes=nodes_less(self.snapshot.nodes, running))
        if self.decay is not None and self.decay.enabled:
            snapshot = replace(snapshot, tenant_usage=self.usage(running))
        decisions = schedule(
            snapshot=snapshot,
            pending=list(self.pending.values()),
            running=running,
            now=self.now,
            policy=self.policy,
        )
        for preemption in decisions.preemptions:
            victim = self.running[preemption.victim_id][0].request
            self.stop(preemption.victim_id, at=self.now)
            # Counted as the portal counts them: a tier's cap on evictions applies.
            self.pending[victim.id] = replace(victim, evictions=victim.evictions + 1)
            self.evictions.append(Eviction(self.now, victim.id, preemption.preemptor_id))
        for admission in decisions.admissions:
            request = self.pending.pop(admission.request_id)
            workload = RunningWorkload(
                request=request,
                gpu_class=admission.gpu_class,
                placements=admission.placements,
                started_at=self.now,
                borrowed=admission.borrowed,
            )
            self.running[request.id] = (workload, self.now + self.left[request.id])
            self.first_starts.setdefault(request.id, self.now)


def simulate(
    *,
    snapshot: ClusterSnapshot,
    arrivals: Sequence[Arrival],
    policy: Policy,
    until: datetime,
    max_cycles: int | None = None,
    decay: UsageDecay | None = None,
) -> Simulation:
    """Replay ``arrivals`` on ``snapshot`` (its nodes empty: their whole capacity free) under
    ``policy`` until ``until``; work still holding capacity then is cut at ``until``. With
    ``decay``, each cycle weighs the tenants' decayed usage since the start as the portal does.

    Raises ``SimulationTooLarge`` past ``max_cycles`` cycles.
    """
    run = _Run(snapshot=snapshot, arrivals=arrivals, policy=policy, decay=decay)
    run.now = min((a.request.submitted_at for a in arrivals), default=until)
    while (at := run.next_event()) is not None and at <= until:
        run.advance(at)
        if max_cycles is not None and run.cycles > max_cycles:
            raise SimulationTooLarge(f"more than {max_cycles} scheduling cycles")
    for request_id in sorted(run.running):
        run.stop(request_id, at=until)
    return Simulation(
        stints=tuple(run.stints),
        first_starts=run.first_starts,
        evictions=tuple(run.evictions),
        cycles=run.cycles,
    )
