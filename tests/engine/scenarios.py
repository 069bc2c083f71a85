"""Seeded random cycles that touch every rule at once, for locking decisions.

``mixed_cluster(seed)`` draws a cluster of 3 GPU classes in 3 pools with racks and blocks,
partly busy with running work (whole GPUs and shares, some borrowed, some not preemptible),
a few taints, cordons and MIG slices, quotas with a cohort and a project limit, two active
reservations, and a queue of whole-GPU, share, MIG and CPU-only gangs with affinities,
anti-affinity, required topology, elastic minimums and max runtimes. Python's own seeded
generator keeps the draws the same on every platform.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from datetime import timedelta
from random import Random

from scheduling.engine import (
    ClusterSnapshot,
    Decisions,
    NodeSelectorRequirement,
    NodeState,
    PendingReason,
    PreferredAffinity,
    Quota,
    ReplicaPlacement,
    Request,
    Reservation,
    RunningWorkload,
    SelectorOperator,
    Taint,
    TaintEffect,
    Toleration,
    TolerationOperator,
)
from scheduling.engine.model import MIG_SLICES_PER_GPU

from .builders import NOW

CLASSES = ("H100-80GB", "A100-80GB", "L4")
POOLS = ("p0", "p1", "p2")
TENANTS = tuple(f"t{i}" for i in range(6))
MIG = "mig-1g.10gb"


def _locked_repr(pending: tuple[PendingReason, ...]) -> str:
    """The pending reasons' repr without the range's bounds, which came later (with max
    runtimes only, as every locked cycle has, both bounds equal the estimate)."""
    reasons = [
        f"PendingReason(request_id={p.request_id!r}, code={p.code!r}, message={p.message!r},"
        f" queue_position={p.queue_position!r}, estimated_start={p.estimated_start!r})"
        for p in pending
    ]
    return f"({reasons[0]},)" if len(reasons) == 1 else f"({', '.join(reasons)})"


def decisions_digest(decisions: Decisions) -> str:
    """A short fingerprint of every admission, placement, preemption and pending reason (not
    of the quota standings the cycle leaves, which follow from them), in the text the
    decisions' repr had when the fingerprints were locked."""
    decided = (
        f"Decisions(admissions={decisions.admissions!r}, preemptions={decisions.preemptions!r},"
        f" pending={_locked_repr(decisions.pending)})"
    )
    return hashlib.sha256(decided.encode()).hexdigest()[:16]


def _node(rng: Random, i: int) -> NodeState:
    width = rng.choice((4, 8, 8))
    taints: tuple[Taint, ...] = ()
    if rng.random() < 0.05:
        taints += (Taint(key="maintenance", effect=TaintEffect.NO_SCHEDULE),)
    if rng.random() < 0.1:
        taints += (Taint(key="spot", effect=TaintEffect.PREFER_NO_SCHEDULE),)
    return NodeState(
        name=f"n{i:03d}",
        pool=POOLS[i % len(POOLS)],
        gpu_class=rng.choice(CLASSES),
        gpu_free_milli=tuple(rng.choice((0, 0, 250, 500, 1000, 1000, 1000)) for _ in range(width)),
        cpu_free_milli=rng.randint(8, 128) * 1000,
        memory_free_mib=rng.randint(64, 1024) * 1024,
        mig_free={MIG: rng.randint(0, 3)} if rng.random() < 0.2 else {},
        labels={"zone": f"z{i % 2}"},
        taints=taints,
        topology={"rack": f"r{i // 6}", "block": f"b{i // 24}"},
        cordoned=rng.random() < 0.03,
    )


def _running_on(rng: Random, node: NodeState) -> RunningWorkload | None:
    """Work that explains part of the node's busy GPUs: its fully busy ones, or one share."""
    busy = [i for i, free in enumerate(node.gpu_free_milli) if free == 0]
    shared = [i for i, free in enumerate(node.gpu_free_milli) if 0 < free < 1000]
    if shared and (not busy or rng.random() < 0.3):
        gpus, share = (shared[0],), 1000 - node.gpu_free_milli[shared[0]]
    elif busy:
        gpus, share = tuple(busy[: rng.randint(1, len(busy))]), 0
    else:
        return None
    workload = Request(
        id=f"run-{node.name}",
        tenant=rng.choice(TENANTS),
        project="main",
        tier=rng.randint(0, 3),
        gpu_classes=(node.gpu_class,),
        submitted_at=NOW - timedelta(hours=5),
        gpus=0 if share else len(gpus),
        gpu_milli=share,
        cpu_milli=1000,
        memory_mib=1024,
        max_runtime=timedelta(hours=rng.randint(1, 30)) if rng.random() < 0.8 else None,
        preemptible=rng.random() < 0.8,
        evicted_by=("q005",) if rng.random() < 0.1 else (),
    )
    placement = ReplicaPlacement(
        node=node.name, gpu_indices=gpus, gpu_milli=share or 1000, cpu_milli=1000, memory_mib=1024
    )
    return RunningWorkload(
        request=workload,
        gpu_class=node.gpu_class,
        placements=(placement,),
        started_at=NOW - timedelta(minutes=rng.randint(1, 600)),
        borrowed=rng.random() < 0.2,
    )


def _pending(rng: Random, i: int) -> Request:
    kind = rng.choice(("whole", "whole", "share", "mig", "cpu"))
    replicas = rng.randint(1, 8)
    zone = NodeSelectorRequirement(key="zone", operator=SelectorOperator.IN, values=("z0",))
    other_zone = NodeSelectorRequirement(key="zone", operator=SelectorOperator.IN, values=("z1",))
    return Request(
        id=f"q{i:03d}",
        tenant=rng.choice(TENANTS),
        project="small" if rng.random() < 0.2 else "main",
        tier=rng.randint(0, 3),
        gpu_classes=tuple(rng.sample(CLASSES, rng.randint(1, 2))),
        submitted_at=NOW - timedelta(minutes=rng.randint(0, 1000)),
        gpus=rng.choice((1, 2, 4, 8)) if kind == "whole" else 0,
        gpu_milli=rng.choice((200, 500)) if kind == "share" else 0,
        mig_profile=MIG if kind == "mig" else None,
        mig_count=1 if kind == "mig" else 0,
        replicas=replicas,
        min_replicas=rng.randint(1, replicas) if rng.random() < 0.2 else None,
        cpu_milli=rng.randint(0, 32) * 1000,
        memory_mib=rng.randint(0, 256) * 1024,
        pools=(rng.choice(POOLS),) if rng.random() < 0.2 else (),
        tolerations=(
            (Toleration(key="maintenance", operator=TolerationOperator.EXISTS),)
            if rng.random() < 0.1
            else ()
        ),
        required_affinity=(zone,) if rng.random() < 0.1 else (),
        preferred_affinity=(
            (PreferredAffinity(weight=10, requirements=(other_zone,)),)
            if rng.random() < 0.1
            else ()
        ),
        anti_affinity=rng.random() < 0.15,
        required_topology=rng.choice(("rack", "block", "hostname"))
        if rng.random() < 0.15
        else None,
        max_runtime=timedelta(hours=rng.randint(1, 24)) if rng.random() < 0.8 else None,
        preemptible=rng.random() < 0.7,
    )


def mixed_cluster(
    seed: int,
) -> tuple[ClusterSnapshot, list[Request], list[RunningWorkload]]:
    rng = Random(seed)
    nodes = [_node(rng, i) for i in range(rng.randint(20, 80))]
    running = [w for n in nodes if rng.random() < 0.8 and (w := _running_on(rng, n)) is not None]
    quotas = [
        Quota(
            tenant=tenant,
            gpu_class=gpu_class,
            guarantee=(guarantee := rng.randint(0, 40)),
            limit=guarantee + rng.randint(0, 40),
            cohort="lab" if rng.random() < 0.7 else None,
        )
        for tenant in TENANTS
        for gpu_class in CLASSES
    ]
    # Shares and MIG instances have quotas of their own, as large as the whole GPUs' (drawn
    # without the random stream, so that the scenarios stay those the fingerprints locked).
    quotas += [
        replace(q, guarantee=q.guarantee * scale, limit=q.limit * scale, **form)
        for q in list(quotas)
        for form, scale in (({"shared": True}, 1000), ({"mig_profile": MIG}, MIG_SLICES_PER_GPU))
    ]
    quotas.append(Quota(tenant="t0", project="small", gpu_class=CLASSES[0], guarantee=4, limit=6))
    window = {"starts_at": NOW - timedelta(hours=1), "ends_at": NOW + timedelta(hours=3)}
    reservations = (
        Reservation(id="r1", tenant="t1", gpu_class=CLASSES[0], gpus=8, pool="p0", **window),
        Reservation(id="r2", tenant="t2", gpu_class=CLASSES[1], gpus=16, pool="p1", **window),
    )
    pending = [_pending(rng, i) for i in range(rng.randint(30, 200))]
    snapshot = ClusterSnapshot(
        nodes=tuple(nodes),
        quotas=tuple(quotas),
        reservations=reservations,
        tenant_weights={"t3": 2.0},
    )
    return snapshot, pending, running
