"""What would unblock a waiting workload: the engine's alternatives (`engine.alternatives`),
each tried by a what-if on the state the last cycle kept, as the portal shows them (with their
cost at the catalog's prices and a quota request's prefilled form). ``what_if`` asks for them:
for a what-if's waiting answer, and for the one pending workload a page, the API's detail or
`gpuctl why` shows."""

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from urllib.parse import urlencode

from django.conf import settings

from ..engine.alternatives import Alternative, alternatives
from ..engine.model import MILLI_PER_GPU, Request
from ..engine.trials import answer_of_what_if, kept_answers
from ..engine.what_if import CycleEnd, WhatIf
from ..models import Workload
from ..selectors.prices import usage_prices


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


def _shown(alternative: Alternative, workload: Workload, *, waits_because: str) -> ShownAlternative:
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
            reason=f"{workload.project.slug}/{workload.name} waits: {waits_because}"[:1000],
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


def alternatives_shown(
    end: CycleEnd,
    request: Request,
    workload: Workload,
    *,
    now: datetime,
    waits_because: str,
    waiting: WhatIf | None = None,
) -> tuple[ShownAlternative, ...]:
    """The alternatives of ``request`` (``workload``'s, waiting for ``waits_because``), tried
    by what-ifs on the state a cycle kept, soonest start first. ``waiting``: the what-if's
    answer for the request alone, when already asked."""
    answer_of = kept_answers(end, now=now)
    found = alternatives(
        request=request,
        waiting=answer_of_what_if(waiting) if waiting else answer_of(request),
        snapshot=end.snapshot,
        running=end.running,
        now=now,
        answer_of=answer_of,
        may_shrink=may_shrink(workload.kind),
    )
    return tuple(_shown(a, workload, waits_because=waits_because) for a in found)
