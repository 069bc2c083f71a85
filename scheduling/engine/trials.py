"""Trying one request against a cycle's state without changing it: the answer a what-if gives
and the check every alternative passes (``alternatives``).

A trial is the request, optionally at a later instant (the cluster as it will be once running
work past its max runtime has ended) and optionally with one quota replaced (as a granted
quota request would leave it). ``cycle_answers`` makes an ``AnswerOf`` from the real
``schedule``, a full cycle per answer; ``kept_answers`` from the state the last cycle kept
(``what_if``), which answers the same for a fraction of the cost.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from .model import (
    MILLI_PER_GPU,
    ClusterSnapshot,
    Decisions,
    NodeState,
    Policy,
    Quota,
    Request,
    RunningWorkload,
)
from .schedule import schedule
from .what_if import CycleEnd, WhatIf, what_if


@dataclass(frozen=True)
class Answer:
    """What the engine decides for one request: admitted now (on ``gpu_class``, in ``pool``),
    or pending with its ``code``, sentence and estimated start."""

    admitted: bool
    gpu_class: str = ""
    pool: str = ""
    replicas: int = 0
    code: str = ""
    message: str = ""
    estimated_start: datetime | None = None

    def start(self, *, now: datetime) -> datetime | None:
        """When it would start: now if admitted, else its estimate (None: unknown)."""
        return now if self.admitted else self.estimated_start


class AnswerOf(Protocol):
    """The engine's answer for ``request`` on a fixed state (the last cycle's): as submitted
    now, or (``at``) submitted at a later instant on the cluster running work leaves by then,
    or with ``quota`` in place of the tenant's quota of the same resource."""

    def __call__(
        self, request: Request, *, at: datetime | None = None, quota: Quota | None = None
    ) -> Answer: ...


def answer_in(decisions: Decisions, *, request_id: str, nodes: Sequence[NodeState]) -> Answer:
    """The answer ``decisions`` hold for ``request_id`` (its pool read from ``nodes``)."""
    for admission in decisions.admissions:
        if admission.request_id == request_id:
            pools = {node.name: node.pool for node in nodes}
            first = admission.placements[0].node if admission.placements else ""
            return Answer(
                admitted=True,
                gpu_class=admission.gpu_class,
                pool=pools.get(first, ""),
                replicas=len(admission.placements),
            )
    for reason in decisions.pending:
        if reason.request_id == request_id:
            return Answer(
                admitted=False,
                code=reason.code,
                message=reason.message,
                estimated_start=reason.estimated_start,
            )
    raise KeyError(request_id)


def with_quota(snapshot: ClusterSnapshot, quota: Quota) -> ClusterSnapshot:
    """``snapshot`` with ``quota`` in place of the one of its tenant, project and resource."""
    key = (quota.tenant, quota.project, quota.resource)
    kept = tuple(q for q in snapshot.quotas if (q.tenant, q.project, q.resource) != key)
    return dataclasses.replace(snapshot, quotas=(*kept, quota))


def _freed(node: NodeState, ended: Sequence[RunningWorkload]) -> NodeState:
    gpu_free = list(node.gpu_free_milli)
    mig_free = dict(node.mig_free)
    cpu, memory = node.cpu_free_milli, node.memory_free_mib
    for workload in ended:
        for placement in workload.placements:
            if placement.node != node.name:
                continue
            for index in placement.gpu_indices:
                share = placement.gpu_milli or MILLI_PER_GPU
                gpu_free[index] = min(MILLI_PER_GPU, gpu_free[index] + share)
            if placement.mig_profile:
                mig_free[placement.mig_profile] = (
                    mig_free.get(placement.mig_profile, 0) + placement.mig_count
                )
            cpu += placement.cpu_milli
            memory += placement.memory_mib
    return dataclasses.replace(
        node,
        gpu_free_milli=tuple(gpu_free),
        mig_free=mig_free,
        cpu_free_milli=cpu,
        memory_free_mib=memory,
    )


def cluster_at(
    snapshot: ClusterSnapshot, running: Sequence[RunningWorkload], *, at: datetime
) -> tuple[ClusterSnapshot, tuple[RunningWorkload, ...]]:
    """The cluster at ``at`` if nothing new is admitted before: running work whose max runtime
    has ended by then is gone and its capacity free; work without one still runs."""
    ended = [w for w in running if w.expected_end is not None and w.expected_end <= at]
    if not ended:
        return snapshot, tuple(running)
    held = {p.node for w in ended for p in w.placements}
    nodes = tuple(_freed(n, ended) if n.name in held else n for n in snapshot.nodes)
    gone = {w.request.id for w in ended}
    return (
        dataclasses.replace(snapshot, nodes=nodes),
        tuple(w for w in running if w.request.id not in gone),
    )


def cycle_answers(
    *,
    snapshot: ClusterSnapshot,
    pending: Sequence[Request],
    running: Sequence[RunningWorkload],
    now: datetime,
    policy: Policy,
) -> AnswerOf:
    """An ``AnswerOf`` that runs the real cycle on the state with the request added to the
    pending work (in place of a pending request with its id, so a waiting workload is tried
    as itself). A full cycle per answer: the what-if's state answers the same for less."""

    def answer_of(
        request: Request, *, at: datetime | None = None, quota: Quota | None = None
    ) -> Answer:
        state, work = (
            (snapshot, tuple(running)) if at is None else cluster_at(snapshot, running, at=at)
        )
        if quota is not None:
            state = with_quota(state, quota)
        others = [r for r in pending if r.id != request.id]
        decisions = schedule(
            snapshot=state,
            pending=[*others, request],
            running=work,
            now=at or now,
            policy=policy,
        )
        return answer_in(decisions, request_id=request.id, nodes=state.nodes)

    return answer_of


def kept_answers(end: CycleEnd, *, now: datetime) -> AnswerOf:
    """An ``AnswerOf`` on the state a cycle kept (``what_if``), a request with the id of a
    waiting one tried in its place. A later instant or another quota changes that state as
    ``cycle_answers`` changes the cycle's; the blocked heads ahead keep the shadows they
    planned when it was kept."""

    def answer_of(
        request: Request, *, at: datetime | None = None, quota: Quota | None = None
    ) -> Answer:
        state = end.without(request.id)
        if at is not None:
            snapshot, running = cluster_at(state.snapshot, state.running, at=at)
            state = dataclasses.replace(state, snapshot=snapshot, running=running)
        if quota is not None:
            state = dataclasses.replace(state, snapshot=with_quota(state.snapshot, quota))
        [answer] = what_if(state, [request], now=at or now)
        return answer_of_what_if(answer)

    return answer_of


def answer_of_what_if(answer: WhatIf) -> Answer:
    """A what-if's answer as an ``Answer``."""
    if answer.admitted:
        return Answer(
            admitted=True,
            gpu_class=answer.gpu_class,
            pool=answer.pools[0] if answer.pools else "",
            replicas=len(answer.placements),
        )
    pending = answer.pending
    return Answer(
        admitted=False,
        code=pending.code,
        message=pending.message,
        estimated_start=pending.estimated_start,
    )
