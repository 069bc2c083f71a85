"""Reads of fairness over time: each organization's standing in fair share, as the cycle weighs
it (``scheduling.engine.fairness``): its decayed usage, what it holds now, its weight, and the
organizations whose work goes before or after its own."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings

from tenants.models import Organization
from tenants.permissions import Action, Caller, authorize, require_operator

from ..engine.fairness import DecayedUsage, UsageDecay, placement_gpu_milli
from ..engine.model import ReplicaPlacement
from ..models import Node, Placement, TenantUsage, Workload

SHOWN = 3  # organizations named in a sentence


@dataclass(frozen=True)
class Standing:
    organization: str
    weight: float
    # Decayed, class-weighted GPU-hours of ended and running work.
    decayed_gpu_hours: float
    # Of the cluster's weighted GPUs held now; of every organization's decayed usage.
    current_share: float
    usage_share: float
    # The weight over the weights of the organizations that use GPUs or wait for them.
    fair_share: float
    # What it used (now and decayed) against its fair share: 1 is its share exactly.
    times_its_share: float
    # Those with work waiting that goes before its own at the same tier, and after it.
    behind: tuple[str, ...]
    ahead_of: tuple[str, ...]
    half_life_hours: float
    sentence: str

    @property
    def key(self) -> float:
        """What the engine orders by (lower goes first): used share over weight."""
        return (self.current_share + self.usage_share) / self.weight


# What fair share reads of a placement: its class (its node's: an eviction that requeues
# clears the workload's), what it holds, since when.
HELD_FIELDS = (
    "node__pool__gpu_class__name",
    "gpu_indices",
    "gpu_milli",
    "mig_profile",
    "mig_count",
    "started_at",
)


def held_gpu_milli(indices: list[int], milli: int, profile: str, count: int) -> int:
    """A placement's milli-GPU from its HELD_FIELDS."""
    return placement_gpu_milli(
        ReplicaPlacement(
            node="",
            gpu_indices=tuple(indices),
            gpu_milli=milli,
            mig_profile=profile or None,
            mig_count=count,
        )
    )


def usage_decay() -> UsageDecay:
    """The decay the settings ask for (PORTAL_FAIR_SHARE_HALF_LIFE_HOURS, ..._CLASS_WEIGHTS)."""
    return UsageDecay(
        half_life=timedelta(hours=settings.PORTAL_FAIR_SHARE_HALF_LIFE_HOURS),
        class_weights=settings.PORTAL_FAIR_SHARE_CLASS_WEIGHTS,
    )


def past_usage(*, now: datetime) -> dict[str, float]:
    """Each organization's decayed GPU-seconds of ended work as the last cycle counted them,
    decayed on to ``now`` (reads only: the cycle itself brings them up to date)."""
    decay = usage_decay()
    past = {}
    for slug, gpu_seconds, as_of in TenantUsage.objects.values_list(
        "organization__slug", "gpu_seconds", "as_of"
    ):
        usage = DecayedUsage(decay, as_of=as_of, totals={slug: gpu_seconds})
        usage.advance(now)
        past[slug] = usage.totals[slug]
    return past


def fair_share_standings(
    *, caller: Caller, now: datetime, including: str | None = None
) -> list[Standing]:
    """Every organization that uses GPUs, used them or waits for them (and ``including``),
    lowest key first."""
    require_operator(caller)
    return _standings(now=now, including=including)


def fair_share_standing(*, caller: Caller, organization: Organization, now: datetime) -> Standing:
    """The organization's own standing (it appears even when it uses nothing)."""
    authorize(caller=caller, organization=organization, action=Action.ORGANIZATION_VIEW)
    standings = _standings(now=now, including=organization.slug)
    return next(s for s in standings if s.organization == organization.slug)


def _standings(*, now: datetime, including: str | None = None) -> list[Standing]:
    decay = usage_decay()
    capacity = sum(
        count * decay.class_weights.get(gpu_class or "", 1.0)
        for gpu_class, count in Node.objects.filter(ready=True).values_list(
            "pool__gpu_class__name", "gpu_count"
        )
    )
    held: dict[str, float] = defaultdict(float)
    decayed: dict[str, float] = defaultdict(float)
    if decay.enabled:
        decayed.update(past_usage(now=now))
    running = Placement.objects.filter(ended_at__isnull=True).values_list(
        "workload__project__organization__slug", *HELD_FIELDS
    )
    for slug, gpu_class, indices, milli, profile, count, started_at in running:
        gpu_milli = held_gpu_milli(indices, milli, profile, count)
        held[slug] += gpu_milli / 1000 * decay.class_weights.get(gpu_class or "", 1.0)
        if decay.enabled:
            decayed[slug] += decay.held(
                gpu_milli=gpu_milli,
                gpu_class=gpu_class or "",
                started_at=started_at,
                ended_at=now,
                now=now,
            )
    waiting = set(
        Workload.objects.filter(state=Workload.State.PENDING).values_list(
            "project__organization__slug", flat=True
        )
    )
    active = {s for s, v in decayed.items() if v > 0} | set(held) | waiting | {including}
    weights = {
        slug: float(weight)
        for slug, weight in Organization.objects.filter(slug__in=active).values_list(
            "slug", "fair_share_weight"
        )
    }
    total_weight = sum(weights.values()) or 1.0
    usage_shares = decay.shares(decayed)
    rows = []
    for slug, weight in weights.items():
        current = held[slug] / capacity if capacity else 0.0
        usage = usage_shares.get(slug, 0.0)
        rows.append((slug, weight, current, usage))
    used_total = sum(current + usage for _, _, current, usage in rows) or 1.0
    keys = {slug: (current + usage) / weight for slug, weight, current, usage in rows}
    standings = []
    for slug, weight, current, usage in rows:
        fair = weight / total_weight
        times = (current + usage) / used_total / fair
        queued = sorted(waiting - {slug}, key=lambda s: (keys[s], s))
        behind = tuple(s for s in queued if keys[s] < keys[slug])
        ahead_of = tuple(s for s in queued if keys[s] > keys[slug])
        standings.append(
            Standing(
                organization=slug,
                weight=weight,
                decayed_gpu_hours=decayed[slug] / 3600,
                current_share=current,
                usage_share=usage,
                fair_share=fair,
                times_its_share=times,
                behind=behind,
                ahead_of=ahead_of,
                half_life_hours=decay.half_life.total_seconds() / 3600,
                sentence=_sentence(slug, decay.half_life, decayed[slug] / 3600, times, behind),
            )
        )
    return sorted(standings, key=lambda s: (s.key, s.organization))


def _sentence(
    slug: str, half_life: timedelta, gpu_hours: float, times: float, behind: tuple[str, ...]
) -> str:
    """Why the organization's work is ordered where it is, as its users read it."""
    if half_life <= timedelta(0):
        used = f"{slug} holds {times:.1f}x its share now (past usage does not count)"
    else:
        days = half_life.total_seconds() / 86400
        used = (
            f"{slug} used {gpu_hours:,.0f} GPU-hours lately (each counting half after"
            f" {days:g} days), {times:.1f}x its share"
        )
    if behind:
        names = ", ".join(f"{name}'s" for name in behind[:SHOWN])
        more = f" and {len(behind) - SHOWN} more" if len(behind) > SHOWN else ""
        until = " until its usage decays" if half_life > timedelta(0) else ""
        return f"{used}: its work queues behind {names}{more} at the same tier{until}."
    return f"{used}: no other organization's waiting work goes before its own."
