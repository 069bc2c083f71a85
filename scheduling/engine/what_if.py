"""What-if: the cycle's decision for requests not yet submitted, from the state the last cycle
left, without re-running the queue.

A cycle that admits nothing leaves the cluster as it found it, so the next one, run with the
same queue, decides the same again; a request submitted before it is decided where the queue
order puts it, with the cluster, the quota ledger and the shadows it meets there. Of the work
ahead of it, only the blocked heads that plan their class's shadow change what it meets (the
rest fails without leaving a trace), so a what-if gives the request those heads' shadows and
decides it with the same ``_Cycle`` code, on the end state kept by ``schedule_keeping``
(docs/developers/engine.md, What-if).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from .backfill import Shadow
from .explain import CAPACITY_CODES, PendingCode
from .free_capacity import ClusterState, Demand
from .model import (
    Admission,
    ClusterSnapshot,
    Decisions,
    NodeState,
    PendingReason,
    Policy,
    ReplicaPlacement,
    Request,
    RunningWorkload,
    TaskType,
)
from .parking import Parking
from .schedule import _Cycle, _Failure, pending_reason, task_type


@dataclass(frozen=True)
class CycleEnd:
    """What a what-if needs of the state a cycle left: the cluster after its admissions and
    evictions, the work running then, the queue it left waiting, and the blocked heads of
    that queue that planned their class's shadow."""

    snapshot: ClusterSnapshot
    running: tuple[RunningWorkload, ...]
    waiting: WaitingQueue
    heads: tuple[tuple[Request, str, Shadow], ...]  # each with the class of the shadow it planned
    mix: Counter[TaskType]  # the task types of the waiting and running work
    policy: Policy
    decided_at: datetime
    settled: bool  # it admitted and evicted nothing: the next cycle decides the same

    def waits(self, request_id: str) -> bool:
        """Whether the cycle left ``request_id`` waiting (weighed, not admitted)."""
        return bool((self.waiting.ids == request_id.encode()).any())

    def without(self, request_id: str) -> CycleEnd:
        """The state as if ``request_id`` were not waiting, for a variant of it tried in its
        place: its shadow gone. (The waiting queue stays: a request never counts one with its
        own id and submit time ahead of it.)"""
        heads = tuple(head for head in self.heads if head[0].id != request_id)
        return dataclasses.replace(self, heads=heads)


@dataclass(frozen=True)
class WhatIf:
    """The cycle's decision for one request: where it would run, or why it would wait."""

    request_id: str
    admitted: bool
    gpu_class: str  # where it runs; waiting: the class of its binding constraint
    pools: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()
    placements: tuple[ReplicaPlacement, ...] = ()
    borrowed: bool = False
    preempts: int = 0  # running workloads evicted to admit it
    pending: PendingReason | None = None  # why it would wait (None: admitted)


def schedule_keeping(
    *,
    snapshot: ClusterSnapshot,
    pending: Sequence[Request],
    running: Sequence[RunningWorkload],
    now: datetime,
    policy: Policy,
    parked: Parking | None = None,
) -> tuple[Decisions, CycleEnd]:
    """``schedule``, and the state it leaves for what-ifs."""
    cycle = _Cycle(snapshot=snapshot, running=running, now=now, policy=policy)
    decisions = cycle.run(pending, parked=parked)
    shadows = {
        shadow.request_id: (f.gpu_class, shadow)
        for shadow, f in ((cycle.backfill.shadow(f.gpu_class), f) for _, f in cycle.failures)
        if shadow is not None
    }
    left = list(cycle.running.values())
    mix = Counter(task_type(Demand.of(r)) for r, _ in cycle.failures)
    mix.update(task_type(Demand.of(w.request)) for w in left)
    end = CycleEnd(
        snapshot=dataclasses.replace(snapshot, nodes=_end_nodes(cycle.cluster)),
        running=tuple(left),
        waiting=WaitingQueue.of(cycle.failures),
        heads=tuple((r, *shadows[r.id]) for r, _ in cycle.failures if r.id in shadows),
        mix=mix,
        policy=policy,
        decided_at=now,
        settled=not decisions.admissions and not decisions.preemptions,
    )
    return decisions, end


def what_if(end: CycleEnd, requests: Sequence[Request], *, now: datetime) -> list[WhatIf]:
    """What the next cycle would decide for ``requests`` (submitted together, at ``now``) if
    nothing else changed; one answer per request, in their order."""
    cycle = _Cycle(snapshot=end.snapshot, running=end.running, now=now, policy=end.policy)
    mix = Counter(end.mix)
    mix.update(task_type(Demand.of(r)) for r in requests)
    heads = {request.id: (request, gpu_class, shadow) for request, gpu_class, shadow in end.heads}
    ordered, demands = cycle.begin([*(h[0] for h in heads.values()), *requests], mix=mix)
    asked = {r.id for r in requests}
    places = [i for i, r in enumerate(ordered) if r.id in asked]
    outcomes: dict[str, Admission | _Failure] = {}
    # The heads behind every request asked change nothing for them: the loop stops at the last.
    for i, (request, demand) in enumerate(zip(ordered[: places[-1] + 1], demands, strict=False)):
        if i < places[0]:
            # A head ahead of every request asked: on this same cluster, it would plan again
            # the shadow it planned.
            _, gpu_class, shadow = heads[request.id]
            cycle.backfill.adopt(gpu_class, shadow)
            continue
        cycle.plans_shadows = i != places[-1]
        outcome = cycle.decide(request, demand)
        if request.id in asked:
            outcomes[request.id] = outcome
    estimator = cycle.estimator()
    queue = _Queue(end.waiting, shares=cycle.shares)
    answers: dict[str, WhatIf] = {}
    for request in (r for r in ordered if r.id in asked):
        outcome = outcomes[request.id]
        if isinstance(outcome, Admission):
            answers[request.id] = _admitted(cycle, outcome)
            continue
        position, ahead = queue.ahead(request)
        needed = ahead.get(outcome.gpu_class, 0) + _need(request)
        estimate = estimator.estimate(request, outcome.code, outcome.gpu_class, needed)
        answers[request.id] = WhatIf(
            request_id=request.id,
            admitted=False,
            gpu_class=outcome.gpu_class,
            pending=pending_reason(request.id, outcome, position, estimate),
        )
        queue.join(request, outcome)
    return [answers[r.id] for r in requests]


def _need(request: Request) -> int:
    return request.gpu_milli_per_replica * request.smallest_gang


def _admitted(cycle: _Cycle, admission: Admission) -> WhatIf:
    pools = {n.name: n.pool for n in cycle.cluster.nodes}
    nodes = tuple(dict.fromkeys(p.node for p in admission.placements))
    return WhatIf(
        request_id=admission.request_id,
        admitted=True,
        gpu_class=admission.gpu_class,
        pools=tuple(sorted({pools[n] for n in nodes})),
        nodes=nodes,
        placements=admission.placements,
        borrowed=admission.borrowed,
        preempts=sum(p.preemptor_id == admission.request_id for p in cycle.preemptor.preemptions),
    )


@dataclass(frozen=True)
class WaitingQueue:
    """The queue a cycle left waiting, as arrays (a what-if counts 10,000 of them in a few
    vector operations): each workload's order key, and what it waits for."""

    tiers: np.ndarray
    tenants: tuple[str, ...]
    tenant_of: np.ndarray  # index into tenants
    submitted: np.ndarray  # datetime64[us], UTC
    ids: np.ndarray  # bytes: a quarter of str's size in the kept state
    # Capacity or priority: it counts in its class's demand ahead of a later request.
    for_capacity: np.ndarray
    classes: tuple[str, ...]
    class_of: np.ndarray  # index into classes
    needs: np.ndarray  # milli-GPU of its smallest gang

    @classmethod
    def of(cls, failures: Sequence[tuple[Request, _Failure]]) -> WaitingQueue:
        tenants = tuple(sorted({r.tenant for r, _ in failures}))
        classes = tuple(sorted({f.gpu_class for _, f in failures}))
        tenant_at = {t: i for i, t in enumerate(tenants)}
        class_at = {c: i for i, c in enumerate(classes)}
        return cls(
            tiers=np.array([r.tier for r, _ in failures], dtype=np.int64),
            tenants=tenants,
            tenant_of=np.array([tenant_at[r.tenant] for r, _ in failures], dtype=np.int64),
            submitted=np.array([_utc(r.submitted_at) for r, _ in failures], dtype="datetime64[us]"),
            ids=np.array([r.id.encode() for r, _ in failures], dtype=bytes),
            for_capacity=np.array([_for_capacity(f.code) for _, f in failures], dtype=bool),
            classes=classes,
            class_of=np.array([class_at[f.gpu_class] for _, f in failures], dtype=np.int64),
            needs=np.array([_need(r) for r, _ in failures], dtype=np.int64),
        )


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(tzinfo=None)


def _for_capacity(code: PendingCode) -> bool:
    return code in CAPACITY_CODES or code == PendingCode.PRIORITY


class _Queue:
    """The waiting queue as the cycle's explanations count it: a request's place among those
    left waiting, and the milli-GPU waiting ahead of it for capacity, per class."""

    def __init__(self, waiting: WaitingQueue, *, shares: dict[str, float]) -> None:
        self._waiting = waiting
        by_tenant = np.array([shares.get(t, 0.0) for t in waiting.tenants] or [0.0])
        self._shares = by_tenant[waiting.tenant_of]
        self._tenant_shares = shares
        self._joined: list[tuple[tuple, str, int]] = []  # requests of the same what-if

    def _key(self, request: Request) -> tuple:
        share = self._tenant_shares.get(request.tenant, 0.0)
        return (-request.tier, share, _utc(request.submitted_at), request.id)

    def ahead(self, request: Request) -> tuple[int, Counter[str]]:
        w = self._waiting
        tier, share, submitted, request_id = self._key(request)
        at = np.datetime64(submitted, "us")
        earlier = (w.submitted < at) | ((w.submitted == at) & (w.ids < request_id.encode()))
        same_share = (self._shares == share) & earlier
        same_tier = (self._shares < share) | same_share
        before = (-w.tiers < tier) | ((-w.tiers == tier) & same_tier)
        counted = np.bincount(
            w.class_of[before & w.for_capacity],
            weights=w.needs[before & w.for_capacity],
            minlength=len(w.classes),
        )
        ahead: Counter[str] = Counter(
            {c: int(n) for c, n in zip(w.classes, counted, strict=True) if n}
        )
        key = (tier, share, submitted, request_id)
        joined = [(gpu_class, need) for other, gpu_class, need in self._joined if other < key]
        for gpu_class, need in joined:
            ahead[gpu_class] += need
        return 1 + int(before.sum()) + len(joined), ahead

    def join(self, request: Request, failure: _Failure) -> None:
        """A request of the same what-if waits too: those after it count it."""
        need = _need(request) if _for_capacity(failure.code) else 0
        self._joined.append((self._key(request), failure.gpu_class, need))


def _end_nodes(cluster: ClusterState) -> tuple[NodeState, ...]:
    """The nodes with the free capacity the cycle left them."""
    return tuple(
        dataclasses.replace(
            node,
            gpu_free_milli=tuple(int(x) for x in cluster.gpu_free[i, : cluster.gpu_count[i]]),
            cpu_free_milli=int(cluster.cpu_free[i]),
            memory_free_mib=int(cluster.memory_free[i]),
            mig_free={p: int(cluster.mig_free[p][i]) for p in node.mig_free},
        )
        for i, node in enumerate(cluster.nodes)
    )
