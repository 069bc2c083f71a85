"""What would unblock a pending workload: the engine's alternatives (`engine.alternatives`),
computed on demand for the one workload shown, on the state the last cycle kept (the what-if's).

Too costly for every pending workload each cycle (a state load and up to
`engine.alternatives.MAX_TRIALS` engine runs each), so only the workload a page, the API's
detail or `gpuctl why` shows; kept for a short while per cycle, since the state they depend on
moves only with cycles and submissions.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from urllib.parse import urlencode

from django.conf import settings
from django.core.cache import cache

from portal import clock
from tenants.permissions import Action, Caller, authorize

from ..engine.alternatives import Alternative, alternatives
from ..engine.model import MILLI_PER_GPU
from ..engine.trials import kept_answers
from ..models import NodePool, SchedulerState, Workload
from ..selectors.prices import usage_prices
from ..specs_from_models import engine_request, gpu_tolerations
from .what_if import cycle_end_now

# How long a workload's alternatives are reused within one cycle: a page refreshing every
# 5 s, or `gpuctl wait` polling, asks the engine once.
CACHE_SECONDS = 60


@dataclass(frozen=True)
class QuotaPrefill:
    """The quota request form's fields for the amount an alternative found missing."""

    gpu_class: str
    resource: str
    mig_profile: str
    amount: int
    reason: str

    @property
    def query(self) -> str:
        """The console form's query string that fills it in."""
        return urlencode(self.__dict__)


@dataclass(frozen=True)
class ShownAlternative:
    """An alternative as the API, the console and gpuctl show it: what changed, the engine's
    answer for it, and the submission's GPU fields as they would be submitted."""

    kind: str
    change: str
    admitted: bool
    gpu_class: str
    pool: str
    start: datetime
    not_before: datetime | None
    gpu_classes: tuple[str, ...]
    gpus: int
    gpu_milli: int
    mig_profile: str
    mig_count: int
    replicas: int
    gpu_hours: float | None
    # At the catalog's prices when it starts (None: nothing prices it): for its max runtime
    # (None without one), and for an hour.
    cost: Decimal | None
    cost_per_hour: Decimal | None
    currency: str
    quota_request: QuotaPrefill | None


def may_shrink(kind: str) -> bool:
    """Whether a kind may run with less GPU per replica than it asked (fewer GPUs, a smaller
    MIG instance): work that trades speed for GPUs, not an inference service, whose replica
    must hold the model it serves."""
    return kind != Workload.Kind.INFERENCE


def _costs(alternative: Alternative, workload: Workload) -> tuple[Decimal | None, Decimal | None]:
    """What it would cost at the prices in force when it starts: over its max runtime, and
    per hour."""
    variant = alternative.request
    units = Decimal(alternative.units)
    if variant.gpu_milli:
        units /= MILLI_PER_GPU  # a share is priced as its fraction of a GPU
    prices = usage_prices(organization_id=workload.project.organization_id, at=alternative.start)
    priced = {
        "gpu_class": alternative.gpu_class,
        "mig_profile": variant.mig_profile if variant.mig_count else "",
        "tier": workload.tier.name,
        "units": units,
    }
    hourly = prices.cost(**priced, span=timedelta(hours=1))
    runtime = variant.max_runtime
    return (prices.cost(**priced, span=runtime) if runtime else None), hourly


def _shown(alternative: Alternative, workload: Workload) -> ShownAlternative:
    variant = alternative.request
    cost, cost_per_hour = _costs(alternative, workload)
    prefill = None
    if alternative.quota is not None:
        increase = alternative.quota
        prefill = QuotaPrefill(
            gpu_class=increase.gpu_class,
            resource=increase.resource,
            mig_profile=increase.mig_profile or "",
            amount=increase.amount,
            reason=f"{workload.project.slug}/{workload.name} waits: {workload.pending_message}"[
                :1000
            ],
        )
    return ShownAlternative(
        kind=alternative.kind.value,
        change=alternative.change,
        admitted=alternative.answer.admitted,
        gpu_class=alternative.gpu_class,
        pool=alternative.answer.pool,
        start=alternative.start,
        not_before=alternative.not_before,
        gpu_classes=variant.gpu_classes,
        gpus=variant.gpus,
        gpu_milli=variant.gpu_milli,
        mig_profile=variant.mig_profile or "",
        mig_count=variant.mig_count,
        replicas=alternative.replicas,
        gpu_hours=alternative.gpu_hours,
        cost=cost,
        cost_per_hour=cost_per_hour,
        currency=settings.PORTAL_CURRENCY,
        quota_request=prefill,
    )


def _computed(workload: Workload, *, now: datetime) -> tuple[ShownAlternative, ...]:
    end, _ = cycle_end_now(now=now)
    waited = workload.submitted_at > end.decided_at or end.waits(str(workload.pk))
    if not waited:
        return ()  # held by another app's check, or in its eviction backoff: nothing to try
    request = engine_request(workload, tolerations=gpu_tolerations(NodePool.objects.all()))
    answer_of = kept_answers(end, now=now)
    found = alternatives(
        request=request,
        waiting=answer_of(request),
        snapshot=end.snapshot,
        running=end.running,
        now=now,
        answer_of=answer_of,
        may_shrink=may_shrink(workload.kind),
    )
    return tuple(_shown(a, workload) for a in found)


def workload_alternatives(*, caller: Caller, workload: Workload) -> tuple[ShownAlternative, ...]:
    """The alternatives of a pending workload, soonest start first (none for one not pending)."""
    authorize(
        caller=caller, organization=workload.project.organization, action=Action.WORKLOAD_VIEW
    )
    if workload.state != Workload.State.PENDING:
        return ()
    cycle = SchedulerState.objects.filter(pk=1).values_list("last_cycle_at", flat=True).first()
    key = f"scheduling:alternatives:{workload.pk}:{cycle.isoformat() if cycle else ''}"
    shown = cache.get(key)
    if shown is None:
        shown = _computed(workload, now=clock.now())
        cache.set(key, shown, CACHE_SECONDS)
    return shown
