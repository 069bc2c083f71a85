"""Policy replay: the portal's own recorded GPU work since a moment, replayed through the
engine's simulation (``engine.simulation``) under the settings in force and under a proposed
change, figures side by side (``replay_report``). It reads and writes nothing.

What is replayed: every GPU workload submitted in the span that held capacity (finished,
failed, cancelled or evicted while running: its recorded run time; still running: until now),
and the work still waiting (its max runtime, else to the end of the span), each at its recorded
submit time, on today's ready nodes, empty at the start of the span. Fair share weighs each
organization's usage decayed with the half-life in force (or the change's), counted from the
start of the span, as the cycle does (``engine.fairness``).
"""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db.models import Prefetch, Q

from portal.templatetags.console import duration
from tenants.models import Organization
from tenants.permissions import Caller, require_operator

from .. import engine
from ..engine.fairness import UsageDecay
from ..engine.model import SHARED
from ..engine.simulation import (
    Arrival,
    Simulation,
    SimulationTooLarge,
    placement_gpu_milli,
    simulate,
)
from ..models import GpuClass, Node, NodePool, Placement, PriorityTier, QuotaGrant, Workload
from ..specs_from_models import (
    engine_nodes,
    engine_quotas,
    engine_request,
    gpu_tolerations,
    schedulable_shapes,
    topology_levels,
)
from .fairness import usage_decay
from .prices import UsagePrices, usage_prices
from .replay_change import ChangeError, PolicyChange, change_check
from .replay_report import RecordedWork, ScenarioFigures, scenario_figures


@dataclass(frozen=True)
class ReplayLimits:
    """How much one replay may take on: past these it is refused, with the reason."""

    span: timedelta
    workloads: int
    cycles: int


# The command's (an operator at a shell can wait) and the staff page's (inside a request: a
# cycle takes milliseconds, and a replay runs about two and a half per workload, twice, so
# the workloads are refused before anything runs and the cycles only bound the unusual).
COMMAND_LIMITS = ReplayLimits(span=timedelta(days=90), workloads=50_000, cycles=500_000)
PAGE_LIMITS = ReplayLimits(span=timedelta(days=31), workloads=600, cycles=1_500)


class ReplayRefused(Exception):
    """The replay was asked for more than its limits allow."""


@dataclass(frozen=True)
class ReplayReport:
    since: datetime
    until: datetime
    change: PolicyChange
    # The fair-share half-life each scenario weighed usage with, in hours (0: off).
    half_life_hours: tuple[float, float]
    workloads: int
    # GPU-hours the recorded work held in the span, per GPU class: what the replay under the
    # current settings must give back (it is the same work, run for the same time).
    recorded_gpu_hours: dict[str, float]
    current: ScenarioFigures
    proposed: ScenarioFigures


@dataclass(frozen=True)
class _History:
    arrivals: list[Arrival]
    work: dict[str, RecordedWork]
    recorded_gpu_hours: dict[str, float]


def _runtime(placements: list[Placement], *, until: datetime) -> timedelta:
    """How long the workload held capacity in all: each admission (its replicas' placements
    share a start) from its start to its last replica's end (or ``until`` if still held)."""
    admissions: dict[datetime, datetime] = {}
    for p in placements:
        end = min(p.ended_at or until, until)
        admissions[p.started_at] = max(admissions.get(p.started_at, end), end)
    return sum((end - start for start, end in admissions.items()), timedelta())


def _history(*, since: datetime, until: datetime, limits: ReplayLimits) -> _History:
    workloads = (
        Workload.objects.filter(submitted_at__gte=since, submitted_at__lt=until)
        .filter(Q(gpus__gt=0) | Q(gpu_milli__gt=0) | Q(mig_count__gt=0))
        .select_related("project__organization", "tier", "gpu_class")
        .prefetch_related(Prefetch("placements", queryset=Placement.objects.order_by("replica")))
        .order_by("submitted_at", "pk")
    )
    count = workloads.count()
    if count > limits.workloads:
        raise ReplayRefused(
            f"{count} workloads were submitted in the span; a replay here takes at most"
            f" {limits.workloads}. Replay a shorter span."
        )
    tolerations = gpu_tolerations(NodePool.objects.select_related("gpu_class"))
    arrivals, work, recorded = [], {}, defaultdict(float)
    for workload in workloads:
        placements = list(workload.placements.all())
        if placements:
            runtime = _runtime(placements, until=until)
        elif workload.state == Workload.State.PENDING:
            runtime = workload.max_runtime or until - workload.submitted_at
        else:
            continue  # it ended without ever holding capacity: nothing to replay
        for p in placements:
            held = (min(p.ended_at or until, until) - p.started_at).total_seconds()
            recorded[workload.gpu_class.name if workload.gpu_class else ""] += (
                placement_gpu_milli(p) * held / 3.6e6
            )
        request = engine_request(workload, tolerations=tolerations)
        arrivals.append(Arrival(request=request, runtime=runtime))
        work[request.id] = RecordedWork(
            organization=request.tenant,
            tier=workload.tier.name,
            submitted_at=workload.submitted_at,
            gpu_milli=request.gpu_milli_per_replica * request.replicas,
            gpu_class=request.gpu_classes[0] if request.gpu_classes else "",
            mig_profile=workload.mig_profile,
        )
    return _History(arrivals, work, dict(recorded))


def replay_snapshot(change: PolicyChange) -> engine.ClusterSnapshot:
    """Today's ready nodes (empty), quotas and weights, with ``change`` applied."""
    nodes = list(
        Node.objects.filter(ready=True, cordoned=False).select_related(
            "pool__gpu_class", "pool__cluster"
        )
    )
    pools = NodePool.objects.select_related("gpu_class")
    quotas = list(
        engine_quotas(QuotaGrant.objects.select_related("organization", "project", "gpu_class"))
    )
    for change_of in change.quotas:
        mine = [
            i
            for i, q in enumerate(quotas)
            if q.tenant == change_of.organization
            and q.project is None
            and q.resource == change_of.resource
        ]
        old = quotas[mine[0]] if mine else None
        gpu_class, _, form = change_of.resource.partition("/")
        limit = change_of.limit
        if limit is None:
            limit = max(old.limit if old else change_of.guarantee, change_of.guarantee)
        new = engine.Quota(
            tenant=change_of.organization,
            gpu_class=gpu_class,
            guarantee=change_of.guarantee,
            limit=limit,
            cohort=old.cohort if old else None,
            mig_profile=form if form.startswith("mig-") else None,
            shared=form == SHARED,
        )
        if mine:
            quotas[mine[0]] = new
        else:
            quotas.append(new)
    quotas = [
        replace(q, cohort=change.cohorts[q.tenant] or None) if q.tenant in change.cohorts else q
        for q in quotas
    ]
    weights = {
        slug: float(weight)
        for slug, weight in Organization.objects.values_list("slug", "fair_share_weight")
    }
    weights |= {org: float(weight) for org, weight in change.weights.items()}
    return engine.ClusterSnapshot(
        nodes=engine_nodes(nodes, []),
        quotas=tuple(quotas),
        topology_levels=topology_levels(pools) or ("rack", "block"),
        tenant_weights=weights,
        node_shapes=schedulable_shapes(nodes),
    )


def replay_policy(placement: str | None) -> engine.Policy:
    return engine.Policy(
        placement=placement or settings.PORTAL_PLACEMENT_POLICY,
        reclaim_after=timedelta(seconds=settings.PORTAL_RECLAIM_AFTER_SECONDS),
        reservation_lead_time=timedelta(seconds=settings.PORTAL_RESERVATION_LEAD_SECONDS),
    )


def replay_decay(change: PolicyChange) -> UsageDecay:
    """The usage decay the cycle weighs fair share with, at the change's half-life if it
    gives one."""
    decay = usage_decay()
    if change.half_life_hours is None:
        return decay
    return replace(decay, half_life=timedelta(hours=change.half_life_hours))


def _with_tiers(arrivals: list[Arrival], tiers: dict[str, int], work) -> list[Arrival]:
    """The arrivals with each tier the change gives its new priority value."""
    if not tiers:
        return arrivals
    return [
        replace(a, request=replace(a.request, tier=tiers[work[a.request.id].tier]))
        if work[a.request.id].tier in tiers
        else a
        for a in arrivals
    ]


def policy_replay(
    *,
    caller: Caller,
    since: datetime,
    until: datetime,
    change: PolicyChange,
    limits: ReplayLimits = PAGE_LIMITS,
) -> ReplayReport:
    """Operators: ``policy_replay_run`` (the command runs it at the shell, an operator's)."""
    require_operator(caller)
    return policy_replay_run(since=since, until=until, change=change, limits=limits)


def policy_replay_run(
    *,
    since: datetime,
    until: datetime,
    change: PolicyChange,
    limits: ReplayLimits = COMMAND_LIMITS,
) -> ReplayReport:
    """Replay the work recorded from ``since`` to ``until`` under today's settings and under
    ``change``. Raises ``ReplayRefused`` past ``limits`` and ``ChangeError`` for a change
    naming what does not exist."""
    if until <= since:
        raise ChangeError("since", "the span must end after it starts.")
    if until - since > limits.span:
        raise ReplayRefused(
            f"the span is {duration(until - since)}; a replay here covers at most"
            f" {duration(limits.span)}. Replay a shorter span."
        )
    tiers = dict(PriorityTier.objects.values_list("name", "value"))
    change = change_check(
        change,
        organizations=Organization.objects.values_list("slug", flat=True),
        gpu_classes=GpuClass.objects.values_list("name", flat=True),
        tiers=tiers,
    )
    history = _history(since=since, until=until, limits=limits)
    capacity = _capacity()

    def run(snapshot, arrivals, policy, decay) -> Simulation:
        try:
            return simulate(
                snapshot=snapshot,
                arrivals=arrivals,
                policy=policy,
                until=until,
                max_cycles=limits.cycles,
                decay=decay,
            )
        except SimulationTooLarge as error:
            raise ReplayRefused(f"the replay would take {error}; replay a shorter span.") from None

    prices = _prices(history.work, at=until)
    figures, half_lives = {}, []
    for name, scenario in (("current", PolicyChange()), ("proposed", change)):
        snapshot = replay_snapshot(scenario)
        decay = replay_decay(scenario)
        half_lives.append(decay.half_life.total_seconds() / 3600)
        simulation = run(
            snapshot,
            _with_tiers(history.arrivals, dict(scenario.tiers), history.work),
            replay_policy(scenario.placement),
            decay,
        )
        figures[name] = scenario_figures(
            simulation=simulation,
            work=history.work,
            since=since,
            until=until,
            capacity=capacity,
            weights=snapshot.tenant_weights,
            prices=prices,
        )
    return ReplayReport(
        since=since,
        until=until,
        change=change,
        half_life_hours=(half_lives[0], half_lives[1]),
        workloads=len(history.arrivals),
        recorded_gpu_hours=history.recorded_gpu_hours,
        current=figures["current"],
        proposed=figures["proposed"],
    )


def _prices(work: dict[str, RecordedWork], *, at: datetime) -> dict[str, UsagePrices]:
    """Each replayed organization's catalog prices at ``at`` (the prices' extension point)."""
    slugs = {recorded.organization for recorded in work.values()}
    return {
        slug: usage_prices(organization_id=pk, at=at)
        for slug, pk in Organization.objects.filter(slug__in=slugs).values_list("slug", "pk")
    }


def span_parse(text: str) -> timedelta:
    """A span as the command takes it: "30d", "12h", "2w"."""
    match = re.fullmatch(r"(\d+)([hdw])", text.strip())
    if not match or not int(match[1]):
        raise ChangeError("since", f"{text!r} is not a span such as 30d, 12h or 2w.")
    unit = {"h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}[match[2]]
    return int(match[1]) * unit


def _tenth(waits, field: str) -> float | None:
    """A wait in minutes to a tenth, as the page and the table show it (None: none)."""
    minutes = getattr(waits, field) if waits else None
    return None if minutes is None else round(minutes, 1)


def _hundredth(hours: Decimal) -> float:
    """GPU-hours to a hundredth, as the page, the table and the JSON show them."""
    return round(float(hours), 2)


def comparison_rows(report: ReplayReport) -> list[tuple[str, str, object, object]]:
    """The report's figures side by side: (section, what, current, proposed)."""
    current, proposed = report.current, report.proposed
    rows: list[tuple[str, str, object, object]] = []
    for name in sorted(set(current.gpu_hours) | set(proposed.gpu_hours)):
        rows.append(
            (
                "GPU-hours",
                name,
                _hundredth(current.gpu_hours.get(name, 0)),
                _hundredth(proposed.gpu_hours.get(name, 0)),
            )
        )
    waits = {(w.organization, w.tier): w for w in proposed.waits}
    for before in current.waits:
        after = waits.get((before.organization, before.tier))
        what = f"{before.organization} / {before.tier}"
        for label, field in (
            ("Wait, median (min)", "median_minutes"),
            ("Wait, p95 (min)", "p95_minutes"),
        ):
            rows.append((label, what, _tenth(before, field), _tenth(after, field)))
        if before.never_started or (after and after.never_started):
            rows.append(
                (
                    "Still waiting at the end",
                    what,
                    before.never_started,
                    after and after.never_started,
                )
            )
    organizations = sorted(set(current.below_fair_share) | set(proposed.below_fair_share))
    for org in organizations:
        rows.append(
            (
                "Preemptions suffered",
                org,
                current.preemptions.get(org, 0),
                proposed.preemptions.get(org, 0),
            )
        )
    for org in organizations:
        rows.append(
            (
                "Hours below fair share (%)",
                org,
                round(100 * current.below_fair_share.get(org, 0.0), 1),
                round(100 * proposed.below_fair_share.get(org, 0.0), 1),
            )
        )
    for org in sorted(set(current.revenue) | set(proposed.revenue)):
        rows.append(
            (
                "Revenue",
                org,
                current.revenue.get(org, Decimal(0)),
                proposed.revenue.get(org, Decimal(0)),
            )
        )
    if current.revenue or proposed.revenue:
        rows.append(("Revenue", "total", current.revenue_total, proposed.revenue_total))
    return rows


def allocation_by(report: ReplayReport, *, hours: int) -> dict[str, list[tuple]]:
    """Mean GPUs allocated per class over blocks of ``hours``: (block start, current,
    proposed) for each block of the span."""
    blocks: dict[str, list[tuple]] = {}
    for gpu_class in sorted(set(report.current.allocation) | set(report.proposed.allocation)):
        both = [s.allocation.get(gpu_class) for s in (report.current, report.proposed)]
        length = max(len(h) for h in both if h)
        current, proposed = (h or [0.0] * length for h in both)
        blocks[gpu_class] = [
            (
                report.since + timedelta(hours=start),
                round(sum(current[start : start + hours]) / len(current[start : start + hours]), 2),
                round(
                    sum(proposed[start : start + hours]) / len(proposed[start : start + hours]), 2
                ),
            )
            for start in range(0, length, hours)
        ]
    return blocks


def report_data(report: ReplayReport) -> dict:
    """The report as JSON-ready data (Decimals as strings, times in ISO 8601)."""

    def scenario(figures: ScenarioFigures) -> dict:
        return {
            "gpu_hours": {name: _hundredth(hours) for name, hours in figures.gpu_hours.items()},
            "allocation_per_hour": figures.allocation,
            "waits": [dataclasses.asdict(w) for w in figures.waits],
            "preemptions": figures.preemptions,
            "below_fair_share": figures.below_fair_share,
            "revenue": {org: str(amount) for org, amount in figures.revenue.items()},
            "revenue_total": str(figures.revenue_total),
            "cycles": figures.cycles,
        }

    return {
        "since": report.since.isoformat(),
        "until": report.until.isoformat(),
        "change": report.change.lines(),
        "half_life_hours": dict(zip(("current", "proposed"), report.half_life_hours, strict=True)),
        "workloads": report.workloads,
        "recorded_gpu_hours": {
            k: round(v, 2) for k, v in sorted(report.recorded_gpu_hours.items())
        },
        "current": scenario(report.current),
        "proposed": scenario(report.proposed),
    }


def _capacity() -> dict[str, int]:
    """GPUs per class on the ready, schedulable nodes."""
    capacity: dict[str, int] = defaultdict(int)
    for name, gpus in Node.objects.filter(ready=True, cordoned=False).values_list(
        "pool__gpu_class__name", "gpu_count"
    ):
        if name:
            capacity[name] += gpus
    return dict(capacity)
