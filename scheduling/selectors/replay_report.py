"""The figures of one replayed scenario: GPU allocation per hour and class, waits per
organization and tier, preemptions, hours below fair share, and revenue at catalog prices.

Fair share, as the report counts it: at each hour's start, each GPU class's GPUs are shared
out by weight among the organizations that want some of them (running on the class, or waiting
for their first start with it as first choice), none getting more than it wants (water-filling,
as DRF's single-resource case); an organization is below its fair share in an hour when it
holds at least one GPU less than its share of some class.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

from portal.money import to_cents

from ..engine.model import MILLI_PER_GPU, mig_profile_milli
from ..engine.simulation import Simulation, Stint
from .prices import SECONDS_PER_HOUR, UsagePrices

HOUR = timedelta(hours=1)
MICROSECOND = timedelta(microseconds=1)
MICROSECONDS_PER_SECOND = 1_000_000


@dataclass(frozen=True)
class RecordedWork:
    """What the report needs of one replayed workload besides its simulation."""

    organization: str
    tier: str
    submitted_at: datetime
    gpu_milli: int  # over all replicas
    gpu_class: str  # its first choice
    mig_profile: str = ""


@dataclass(frozen=True)
class Waits:
    organization: str
    tier: str
    started: int
    median_minutes: float | None
    p95_minutes: float | None
    # Still waiting at the end of the span (its wait is at least until then).
    never_started: int


@dataclass(frozen=True)
class ScenarioFigures:
    # Mean GPUs allocated in each hour of the span, per GPU class.
    allocation: dict[str, list[float]]
    # Exact to the microsecond held, as revenue is priced: GPU-hours rounded to the hundredth
    # (36 GPU-seconds) before a price was up to 2 cents off the revenue at 2.50 an hour.
    gpu_hours: dict[str, Decimal]
    waits: list[Waits]
    preemptions: dict[str, int]  # evictions suffered, per organization
    # The share of the span's hours each organization spent below its fair share.
    below_fair_share: dict[str, float]
    # Revenue at catalog prices per organization (empty without prices).
    revenue: dict[str, Decimal] = field(default_factory=dict)
    cycles: int = 0

    @property
    def revenue_total(self) -> Decimal:
        return sum(self.revenue.values(), Decimal(0))


def percentile(values: list[float], share: float) -> float | None:
    """The nearest-rank percentile (``share`` in 0-1) of ``values``."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def _hours(since: datetime, until: datetime) -> int:
    return max(1, math.ceil((until - since) / HOUR))


def fair_shares(
    *, capacity: int, wants: Mapping[str, int], weights: Mapping[str, float]
) -> dict[str, float]:
    """``capacity`` shared out by weight, none getting more than it wants (water-filling)."""
    shares = {org: 0.0 for org in wants}
    left, open_ = float(capacity), {org for org, want in wants.items() if want > 0}
    while open_ and left > 1e-9:
        total = sum(weights.get(org, 1.0) for org in open_)
        offer = {org: left * weights.get(org, 1.0) / total for org in open_}
        filled = {org for org in open_ if wants[org] - shares[org] <= offer[org]}
        if not filled:
            for org in open_:
                shares[org] += offer[org]
            break
        for org in sorted(filled):
            left -= wants[org] - shares[org]
            shares[org] = float(wants[org])
        open_ -= filled
    return shares


def _allocation(simulation: Simulation, since, until) -> dict[str, list[float]]:
    hours = _hours(since, until)
    per_hour: dict[str, list[float]] = defaultdict(lambda: [0.0] * hours)
    for stint in simulation.stints:
        start, end = max(stint.started_at, since), min(stint.ended_at, until)
        first = int((start - since) // HOUR)
        for hour in range(first, hours):
            bucket_start = since + hour * HOUR
            overlap = (min(end, bucket_start + HOUR) - max(start, bucket_start)).total_seconds()
            if overlap <= 0:
                break
            per_hour[stint.gpu_class][hour] += stint.gpu_milli / MILLI_PER_GPU * overlap / 3600
    return {name: [round(v, 2) for v in values] for name, values in per_hour.items()}


def _held_seconds(stint: Stint, *, since: datetime, until: datetime) -> Decimal:
    """How long ``stint`` held its GPUs within the span, to the microsecond as metering bills
    (whole seconds would drop up to one a stint); zero outside it."""
    held = min(stint.ended_at, until) - max(stint.started_at, since)
    return Decimal(max(held, timedelta(0)) // MICROSECOND) / MICROSECONDS_PER_SECOND


def _gpu_hours(simulation: Simulation, *, since, until) -> dict[str, Decimal]:
    hours: dict[str, Decimal] = defaultdict(Decimal)
    for stint in simulation.stints:
        held = _held_seconds(stint, since=since, until=until)
        hours[stint.gpu_class] += Decimal(stint.gpu_milli) / MILLI_PER_GPU * held / SECONDS_PER_HOUR
    return {name: total for name, total in sorted(hours.items()) if total}


def _waits(simulation: Simulation, work: Mapping[str, RecordedWork]) -> list[Waits]:
    waited: dict[tuple[str, str], list[float]] = defaultdict(list)
    never: dict[tuple[str, str], int] = defaultdict(int)
    for request_id, recorded in work.items():
        key = (recorded.organization, recorded.tier)
        started = simulation.first_starts.get(request_id)
        if started is None:
            never[key] += 1
        else:
            waited[key].append((started - recorded.submitted_at).total_seconds() / 60)
    return [
        Waits(
            organization=org,
            tier=tier,
            started=len(waited[(org, tier)]),
            median_minutes=percentile(waited[(org, tier)], 0.5),
            p95_minutes=percentile(waited[(org, tier)], 0.95),
            never_started=never[(org, tier)],
        )
        for org, tier in sorted(set(waited) | set(never))
    ]


def _below_fair_share(
    simulation: Simulation, work, *, since, until, capacity: Mapping[str, int], weights
) -> dict[str, float]:
    """The share of hours each organization held at least a GPU less than its fair share of
    some class."""
    hours = _hours(since, until)
    # Per hour, per (class, organization): milli-GPU held, and wanted.
    held = [defaultdict(int) for _ in range(hours)]
    wants = [defaultdict(int) for _ in range(hours)]

    def sampled(start: datetime, end: datetime):
        """The hours whose first instant falls in [start, end)."""
        first = max(0, math.ceil((start - since) / HOUR))
        return range(first, min(hours, math.ceil((end - since) / HOUR)))

    for stint in simulation.stints:
        key = (stint.gpu_class, work[stint.request_id].organization)
        for hour in sampled(stint.started_at, stint.ended_at):
            held[hour][key] += stint.gpu_milli
            wants[hour][key] += stint.gpu_milli
    for request_id, recorded in work.items():
        first_start = simulation.first_starts.get(request_id, until)
        for hour in sampled(recorded.submitted_at, first_start):
            wants[hour][(recorded.gpu_class, recorded.organization)] += recorded.gpu_milli
    below: dict[str, int] = defaultdict(int)
    for hour in range(hours):
        short = set()
        for gpu_class, gpus in capacity.items():
            wanted = {org: m for (c, org), m in wants[hour].items() if c == gpu_class}
            shares = fair_shares(capacity=gpus * MILLI_PER_GPU, wants=wanted, weights=weights)
            short |= {
                org
                for org, share in shares.items()
                if held[hour][(gpu_class, org)] + MILLI_PER_GPU <= share
            }
        for org in short:
            below[org] += 1
    organizations = sorted({recorded.organization for recorded in work.values()})
    return {org: round(below[org] / hours, 4) for org in organizations}


def _revenue(simulation: Simulation, work, *, since, until, prices) -> dict[str, Decimal]:
    """What the stints in the span bring at each organization's catalog prices (hourly, per
    GPU or per MIG instance; a share pays its fraction of a GPU), rounded once per total."""
    revenue: dict[str, Decimal] = defaultdict(Decimal)
    for stint in simulation.stints:
        recorded = work[stint.request_id]
        catalog = prices.get(recorded.organization)
        price = catalog and catalog.hourly(
            gpu_class=stint.gpu_class, mig_profile=recorded.mig_profile, tier=recorded.tier
        )
        seconds = _held_seconds(stint, since=since, until=until)
        if price is None or not seconds:
            continue
        units = (
            Decimal(stint.gpu_milli) / mig_profile_milli(recorded.mig_profile)
            if recorded.mig_profile
            else Decimal(stint.gpu_milli) / MILLI_PER_GPU
        )
        revenue[recorded.organization] += units * seconds / SECONDS_PER_HOUR * price
    return {org: to_cents(amount) for org, amount in sorted(revenue.items())}


def scenario_figures(
    *,
    simulation: Simulation,
    work: Mapping[str, RecordedWork],
    since: datetime,
    until: datetime,
    capacity: Mapping[str, int],
    weights: Mapping[str, float],
    prices: Mapping[str, UsagePrices],
) -> ScenarioFigures:
    preemptions: dict[str, int] = defaultdict(int)
    for eviction in simulation.evictions:
        preemptions[work[eviction.victim_id].organization] += 1
    return ScenarioFigures(
        allocation=_allocation(simulation, since, until),
        gpu_hours=_gpu_hours(simulation, since=since, until=until),
        waits=_waits(simulation, work),
        preemptions=dict(sorted(preemptions.items())),
        below_fair_share=_below_fair_share(
            simulation,
            work,
            since=since,
            until=until,
            capacity=capacity,
            weights=weights,
        ),
        revenue=_revenue(simulation, work, since=since, until=until, prices=prices),
        cycles=simulation.cycles,
    )
