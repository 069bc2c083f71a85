"""Builders for engine tests: small clusters and requests with readable defaults.

Every test cluster is made of ``node(...)`` values; every workload of ``request(...)``; a
cycle runs through ``cycle(...)``, which fixes the clock and the policy unless told otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

from scheduling.engine import (
    ClusterSnapshot,
    Decisions,
    NodeState,
    Policy,
    Quota,
    ReplicaPlacement,
    Request,
    Reservation,
    RunningWorkload,
    RuntimeSamples,
    schedule,
)

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def node(
    name: str,
    *,
    gpus: int = 8,
    gpu_class: str = "H100-80GB",
    pool: str = "dgx",
    free: Sequence[int] | None = None,
    cpu: int = 224_000,
    memory: int = 2_000_000,
    **fields,
) -> NodeState:
    return NodeState(
        name=name,
        pool=pool,
        gpu_class=gpu_class,
        gpu_free_milli=tuple(free) if free is not None else (1000,) * gpus,
        cpu_free_milli=cpu,
        memory_free_mib=memory,
        **fields,
    )


def request(
    id: str,
    *,
    tenant: str = "acme",
    project: str = "ai-dev",
    tier: int = 1,
    classes: Sequence[str] = ("H100-80GB",),
    submitted_minutes_ago: int = 10,
    **fields,
) -> Request:
    return Request(
        id=id,
        tenant=tenant,
        project=project,
        tier=tier,
        gpu_classes=tuple(classes),
        submitted_at=NOW - timedelta(minutes=submitted_minutes_ago),
        **fields,
    )


def running(
    workload: Request,
    *placements: ReplicaPlacement,
    gpu_class: str = "H100-80GB",
    started_minutes_ago: int = 30,
    borrowed: bool = False,
    **fields,
) -> RunningWorkload:
    return RunningWorkload(
        request=workload,
        gpu_class=gpu_class,
        placements=placements,
        started_at=NOW - timedelta(minutes=started_minutes_ago),
        borrowed=borrowed,
        **fields,
    )


def on(node_name: str, *gpu_indices: int, milli: int = 1000) -> ReplicaPlacement:
    return ReplicaPlacement(node=node_name, gpu_indices=gpu_indices, gpu_milli=milli)


def quota(tenant: str = "acme", *, gpus: int = 1000, limit: int | None = None, **fields) -> Quota:
    return Quota(
        tenant=tenant,
        gpu_class=fields.pop("gpu_class", "H100-80GB"),
        guarantee=gpus,
        limit=gpus if limit is None else limit,
        **fields,
    )


def cycle(
    *,
    nodes: Sequence[NodeState],
    pending: Sequence[Request] = (),
    running: Sequence[RunningWorkload] = (),
    quotas: Sequence[Quota] | None = None,
    reservations: Sequence[Reservation] = (),
    node_shapes: Sequence[NodeState] = (),
    tenant_weights: Mapping[str, float] | None = None,
    tenant_usage: Mapping[str, float] | None = None,
    placement: str = "bestfit",
    runtimes: RuntimeSamples | None = None,
    **policy_fields,
) -> Decisions:
    tenants = {r.tenant for r in pending} | {w.request.tenant for w in running}
    classes = {node.gpu_class for node in nodes}
    if quotas is None:
        # Plenty of every quota resource the work asks for: whole GPUs, shares, MIG profiles.
        profiles = {r.mig_profile for r in (*pending, *(w.request for w in running))} - {None}
        quotas = [
            quota(t, gpu_class=c, **form)
            for t in sorted(tenants)
            for c in sorted(classes)
            for form in ({}, {"shared": True}, *({"mig_profile": p} for p in sorted(profiles)))
        ]
    snapshot = ClusterSnapshot(
        nodes=tuple(nodes),
        quotas=tuple(quotas),
        reservations=tuple(reservations),
        node_shapes=tuple(node_shapes),
        tenant_weights=dict(tenant_weights or {}),
        tenant_usage=dict(tenant_usage or {}),
        runtimes=runtimes or RuntimeSamples(),
    )
    return schedule(
        snapshot=snapshot,
        pending=pending,
        running=running,
        now=NOW,
        policy=Policy(placement=placement, **policy_fields),
    )


def admitted(decisions: Decisions) -> list[str]:
    return [a.request_id for a in decisions.admissions]


def reason(decisions: Decisions, request_id: str):
    return next(p for p in decisions.pending if p.request_id == request_id)
