"""Fairness over time: each tenant's past GPU usage, decayed with a half-life.

A replica holding ``g`` GPUs of a class of weight ``w`` from ``s`` to ``e`` counts, at time
``t``, ``w * g * integral from s to e of 2 ** (-(t - u) / H) du`` GPU-seconds, which is
``w * g * tau * (2 ** (-(t - e) / H) - 2 ** (-(t - s) / H))`` with ``tau = H / ln 2`` (the
mean life). Each half-life halves what was counted before it. A tenant's usage share is its
part of every tenant's decayed usage (as Slurm normalises usage): it sums to 1 over the tenants
like the shares they hold now, to which it is added, so a day of the cluster to oneself weighs
as much as holding it all now, whatever the half-life. A half-life of 0 counts nothing: fair
share looks only at what runs now.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from .model import (
    MILLI_PER_GPU,
    ReplicaPlacement,
    RunningWorkload,
    mig_profile_milli,
)


def placement_gpu_milli(placement: ReplicaPlacement) -> int:
    """The GPU capacity one replica's placement holds, in milli-GPU."""
    mig = (
        placement.mig_count * mig_profile_milli(placement.mig_profile)
        if placement.mig_profile
        else 0
    )
    return len(placement.gpu_indices) * placement.gpu_milli + mig


@dataclass(frozen=True)
class UsageDecay:
    half_life: timedelta
    # GPU-seconds of a class count this many times (a class not named: once).
    class_weights: Mapping[str, float] = field(default_factory=dict)

    @property
    def enabled(self) -> bool:
        return self.half_life > timedelta(0)

    @property
    def mean_life(self) -> float:
        """In seconds: what a GPU held for ever counts."""
        return self.half_life.total_seconds() / math.log(2)

    def factor(self, elapsed: timedelta) -> float:
        """What a GPU-second counted ``elapsed`` ago counts now."""
        return 2.0 ** (-elapsed.total_seconds() / self.half_life.total_seconds())

    def held(
        self,
        *,
        gpu_milli: int,
        gpu_class: str,
        started_at: datetime,
        ended_at: datetime,
        now: datetime,
    ) -> float:
        """The decayed, weighted GPU-seconds of ``gpu_milli`` held from ``started_at`` to
        ``ended_at``, as counted at ``now``."""
        if not self.enabled or ended_at <= started_at:
            return 0.0
        gpus = gpu_milli / MILLI_PER_GPU * self.class_weights.get(gpu_class, 1.0)
        return gpus * self.mean_life * (self.factor(now - ended_at) - self.factor(now - started_at))

    def shares(self, usage: Mapping[str, float]) -> dict[str, float]:
        """Decayed GPU-seconds per tenant as parts of them all: what
        ``ClusterSnapshot.tenant_usage`` holds."""
        total = sum(usage.values())
        if not self.enabled or total <= 0:
            return {}
        return {tenant: gpu_seconds / total for tenant, gpu_seconds in usage.items()}


class DecayedUsage:
    """Decayed GPU-seconds per tenant of work that ended, kept as of one moment: moving it on
    multiplies every total by the decay between, and an ended stretch of work is added once."""

    def __init__(
        self,
        decay: UsageDecay,
        *,
        as_of: datetime,
        totals: Mapping[str, float] | None = None,
    ) -> None:
        self.decay, self.as_of = decay, as_of
        self.totals: dict[str, float] = defaultdict(float, totals or {})

    def advance(self, now: datetime) -> None:
        if now <= self.as_of:
            return
        factor = self.decay.factor(now - self.as_of) if self.decay.enabled else 0.0
        for tenant in self.totals:
            self.totals[tenant] *= factor
        self.as_of = now

    def add(
        self,
        *,
        tenant: str,
        gpu_milli: int,
        gpu_class: str,
        started_at: datetime,
        ended_at: datetime,
    ) -> None:
        self.totals[tenant] += self.decay.held(
            gpu_milli=gpu_milli,
            gpu_class=gpu_class,
            started_at=started_at,
            ended_at=ended_at,
            now=self.as_of,
        )


def usage_shares(
    decay: UsageDecay,
    *,
    past: Mapping[str, float],
    running: Sequence[RunningWorkload],
    now: datetime,
) -> dict[str, float]:
    """``ClusterSnapshot.tenant_usage``: the decayed GPU-seconds of ended work (``past``, as
    of ``now``) plus those of ``running`` work since it started, as usage shares."""
    if not decay.enabled:
        return {}
    totals = defaultdict(float, past)
    for workload in running:
        totals[workload.request.tenant] += decay.held(
            gpu_milli=sum(placement_gpu_milli(p) for p in workload.placements),
            gpu_class=workload.gpu_class,
            started_at=workload.started_at,
            ended_at=now,
            now=now,
        )
    return decay.shares(totals)
