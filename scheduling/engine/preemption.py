"""Choosing whom to evict so that a pending gang fits: the cheapest allowed victim set."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from .cluster import ClusterState
from .model import ReplicaPlacement, RunningWorkload

MAX_CANDIDATES = 32  # bounds the search; the cheapest victims come first anyway


@dataclass(frozen=True)
class Victim:
    workload: RunningWorkload
    reason: str


def eviction_cost(*, workload: RunningWorkload, now: datetime) -> tuple[int, float, str]:
    """Lowest tier first, then least work lost (GPU-milli x seconds run), then by id."""
    elapsed = max((now - workload.started_at).total_seconds(), 0.0)
    gpu_milli = workload.request.gpu_milli_per_replica * len(workload.placements)
    return workload.request.tier, gpu_milli * elapsed, workload.request.id


def choose_victims(
    *,
    cluster: ClusterState,
    candidates: Sequence[Victim],
    now: datetime,
    place: Callable[[Sequence[Victim]], tuple[ReplicaPlacement, ...] | None],
    could_fit: Callable[[], bool],
) -> tuple[list[Victim], tuple[ReplicaPlacement, ...]] | None:
    """The smallest-cost set of ``candidates`` whose eviction lets ``place(victims)`` succeed
    (``place`` sees the victims, so that it can also ask whether they free enough quota).

    Victims are added in cost order until the gang fits, then each one that turns out not to
    be needed is dropped again (most expensive first). On success the cluster holds the
    gang's placements with the victims' capacity released; on failure it is unchanged.

    ``could_fit()`` is a cheap test that ``place()`` cannot succeed without. Free capacity
    only grows with more victims, so if the cheapest victim alone is not enough and the test
    fails with every candidate evicted, no victim set helps: the search stops there.
    """
    ranked = sorted(candidates, key=lambda v: eviction_cost(workload=v.workload, now=now))
    ranked = ranked[:MAX_CANDIDATES]
    saved = cluster.checkpoint()

    def evict(victim: Victim) -> None:
        for placement in victim.workload.placements:
            cluster.release(placement)

    def release(victims: Sequence[Victim]) -> None:
        cluster.restore(saved)
        for victim in victims:
            evict(victim)

    def attempt(victims: Sequence[Victim]) -> tuple[ReplicaPlacement, ...] | None:
        release(victims)
        return place(victims)

    def hopeless() -> bool:
        release(ranked)
        verdict = not could_fit()
        release(chosen)
        return verdict

    chosen: list[Victim] = []
    for victim in ranked:
        # A failed place() leaves the cluster as it was: holding exactly the victims chosen
        # so far released, so one more victim is one more release.
        chosen.append(victim)
        evict(victim)
        if place(chosen) is not None:
            break
        if len(chosen) == 1 and len(ranked) > 1 and hopeless():
            cluster.restore(saved)
            return None
    else:
        cluster.restore(saved)
        return None
    for victim in reversed(chosen[:-1]):
        trimmed = [v for v in chosen if v is not victim]
        if attempt(trimmed) is not None:
            chosen = trimmed
    placements = attempt(chosen)
    assert placements is not None, "a victim set that fitted no longer fits"
    return chosen, placements
