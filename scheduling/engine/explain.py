"""Why a workload stays pending: a reason code and a sentence with the binding numbers."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from .free_capacity import ClusterState, Demand
from .gang import GangShape
from .model import MILLI_PER_GPU


class PendingCode(StrEnum):
    QUOTA = "quota"
    NO_ELIGIBLE_NODE = "no_eligible_node"
    CAPACITY = "capacity"
    FRAGMENTATION = "fragmentation"
    GANG = "gang"
    TOPOLOGY = "topology"
    RESERVATION = "reservation"
    PRIORITY = "priority"
    INVALID = "invalid"
    # Larger than every schedulable node even when empty (the pool shrank since submission).
    NEVER_FITS = "never_fits"


# Within quota, but short of room on the eligible nodes.
CAPACITY_CODES = frozenset(
    {PendingCode.CAPACITY, PendingCode.FRAGMENTATION, PendingCode.GANG, PendingCode.TOPOLOGY}
)


def class_label(gpu_class: str) -> str:
    """How a sentence names the capacity a request waits for: its GPU class, or CPU."""
    return gpu_class or "CPU"


def counted(count: int, noun: str) -> str:
    """ "1 node", "2 nodes"."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def never_fits(request, too_large: dict[str, list[str]]) -> str:
    """Why a request larger than every schedulable node even when empty waits."""
    label = " or ".join(request.gpu_classes) if request.needs_gpu else class_label("")
    why = " ".join(m for messages in too_large.values() for m in messages)
    return (
        f"{label}: no schedulable node can hold one replica, even empty: {why} It waits until"
        " such a node joins the cluster."
    )


def no_eligible_node(*, gpu_class: str, reasons: Counter[str]) -> tuple[PendingCode, str]:
    label = class_label(gpu_class)
    if not reasons:
        return PendingCode.NO_ELIGIBLE_NODE, f"{label}: the cluster has no such node."
    shown = "; ".join(
        f"{reason} ({counted(count, 'node')})" for reason, count in reasons.most_common(3)
    )
    return PendingCode.NO_ELIGIBLE_NODE, f"{label}: no eligible node: {shown}."


def _amount(milli: int, demand: Demand, gpu_class: str) -> str:
    if demand.is_shared:
        return f"{milli} milli-GPU of {gpu_class}"
    return f"{milli // MILLI_PER_GPU} {gpu_class}"


@dataclass(frozen=True)
class FreeGpus:
    """Free GPU capacity of some nodes as a shortfall sentence counts it, in milli-GPU.

    For a share: every free milli, and the most on one GPU (a share sits on one GPU).
    For whole GPUs: idle GPUs only, and the most idle on one node.
    """

    total: int
    largest: int


def free_gpus(*, cluster: ClusterState, among: np.ndarray, shared: bool) -> FreeGpus:
    frees = cluster.gpu_free[among]
    if shared:
        idle = np.maximum(frees, 0)
        largest = int(idle.max(initial=0))
    else:
        idle = np.where(frees >= MILLI_PER_GPU, MILLI_PER_GPU, 0)
        largest = int(idle.sum(axis=1).max(initial=0))
    return FreeGpus(total=int(idle.sum()), largest=largest)


def capacity_shortfall(
    *, shape: GangShape, gpu_class: str, fitting: int, free: FreeGpus
) -> tuple[PendingCode, str]:
    """Classify a gang that did not fit on its eligible nodes, given how many of its replicas
    fit there at once (``fitting``) and their free GPUs (``free``, counted for its demand)."""
    demand = shape.demand
    need = demand.total_gpu_milli
    total, largest = free.total, free.largest
    short = (
        f"no GPU has {need} milli-GPU free"
        if demand.is_shared
        else f"no node has {need // MILLI_PER_GPU} free"
    )
    if fitting == 0:
        if demand.gpus and total < need:
            return PendingCode.CAPACITY, (
                f"{gpu_class}: {_amount(total, demand, gpu_class)} free on eligible nodes,"
                f" {_amount(need, demand, gpu_class)} needed per replica."
            )
        if demand.gpus and largest < need:
            return PendingCode.FRAGMENTATION, (
                f"{_amount(total, demand, gpu_class)} free in total, but {short}."
            )
        return PendingCode.CAPACITY, (
            f"{gpu_class}: no eligible node has {demand.cpu_milli / 1000:g} CPU,"
            f" {demand.memory_mib} MiB and the GPU share of a replica free at once."
        )
    if fitting < shape.min_replicas and demand.gpus and total < need * shape.min_replicas:
        # Not a matter of the gang's shape: the GPUs are not there, however it were split.
        return PendingCode.CAPACITY, (
            f"{gpu_class}: {_amount(total, demand, gpu_class)} free on eligible nodes,"
            f" {_amount(need * shape.min_replicas, demand, gpu_class)} needed for"
            f" {shape.min_replicas} replicas."
        )
    if fitting < shape.min_replicas:
        return PendingCode.GANG, (
            f"{gpu_class}: only {fitting} of {shape.min_replicas} replicas fit at once"
            f" ({_amount(total, demand, gpu_class)} free); a gang starts whole or not at all."
        )
    level = shape.required_level or "topology domain"
    return PendingCode.TOPOLOGY, (
        f"{gpu_class}: {fitting} replicas fit in the cluster, but no single {level} has room"
        f" for {shape.min_replicas}."
    )
