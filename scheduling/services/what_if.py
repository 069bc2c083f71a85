"""What-if: what the scheduler would do with a submission, without submitting it. The same
checks as a submission, then the engine's ``what_if`` on the state the last cycle kept (or
on a fresh read of the cluster when there is none, or it is stale). Writes nothing."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ValidationError

from portal import clock
from portal.errors import Conflict
from portal.events import ExtensionPoint, checks_run
from tenants.models import Project
from tenants.permissions import Action, Caller, authorize

from .. import engine
from ..models import NodePool, SchedulerState, Workload
from ..selectors.prices import usage_prices
from ..specs_from_models import engine_request, gpu_tolerations
from .alternatives import ShownAlternative, alternatives_shown
from .cycle import cycle_decide, cycle_inputs
from .submission import WorkloadRequest, submission_checked
from .what_if_state import cycle_end_fresh

HOUR = timedelta(hours=1)
# How long a pending workload's alternatives are reused within one cycle: a page refreshing
# every 5 s, or `gpuctl wait` polling, asks the engine once.
ALTERNATIVES_CACHE_SECONDS = 60


class Outcome:
    ADMITTED = "admitted"
    WAITS = "waits"
    REFUSED = "refused"


@dataclass(frozen=True)
class Cost:
    """At the catalog's prices: for the max runtime, or for an hour without one."""

    amount: Decimal
    currency: str
    per: str  # "run" or "hour"


@dataclass(frozen=True)
class Basis:
    """What the answer was computed from."""

    source: str  # "last_cycle" or "fresh_snapshot"
    decided_at: datetime
    note: str  # why not the last cycle's state; empty when it was


@dataclass(frozen=True)
class WorkloadWhatIf:
    name: str
    outcome: str
    answer: engine.WhatIf | None  # None when refused
    refusal: dict[str, list[str]]
    cost: Cost | None
    alternatives: tuple[ShownAlternative, ...] = ()  # what would unblock it, if it waits


@dataclass(frozen=True)
class WhatIfReport:
    workloads: list[WorkloadWhatIf]
    basis: Basis | None  # None when every workload was refused before the engine


def cycle_end_now(*, now) -> tuple[engine.CycleEnd, Basis]:
    """The state a what-if answers from: the last cycle's while fresh; otherwise decided
    afresh (the cycle's reads and engine, nothing written), which takes a full cycle's time."""
    end, note = cycle_end_fresh(now=now)
    if end is not None:
        return end, Basis(source="last_cycle", decided_at=end.decided_at, note="")
    _, end = cycle_decide(cycle_inputs(now=now), now=now)
    return end, Basis(source="fresh_snapshot", decided_at=now, note=note)


# Workloads per what-if of a batch: the engine answers each of them, a sweep's size.
WHAT_IF_BATCH_MAX = 100


def workloads_what_if(
    *,
    caller: Caller,
    project: Project,
    requests: Sequence[WorkloadRequest],
    batch: bool = False,
) -> WhatIfReport:
    """What the next cycle would do with these workloads if they were submitted now together
    and nothing else changed. Whoever may submit may ask; bad input raises as submitting does;
    a refusal (a quota limit, another app's check such as a spent budget) is an answer.
    ``batch``: a batch's body, its fields named as a batch submission's are."""
    field_of: Callable[[int, str], str] = (
        (lambda index, field: f"workloads.{index}.{field}") if batch else (lambda _, f: f)
    )
    checked = submission_checked(
        caller=caller, project=project, requests=requests, field_of=field_of
    )
    workloads = checked.workloads
    refusal = _checks_refusal(caller=caller, project=project, workloads=workloads)
    refused = {
        index: (
            refusal
            or {
                field.rsplit(".", 1)[-1]: texts
                for field, texts in checked.refusals.items()
                if field.startswith(field_of(index, ""))
            }
        )
        for index in range(len(workloads))
    }
    asked = [w for index, w in enumerate(workloads) if not refused[index]]
    answers: dict[str, engine.WhatIf] = {}
    unblocking: dict[str, tuple[ShownAlternative, ...]] = {}
    basis = None
    if asked:
        end, basis = cycle_end_now(now=checked.at)
        tolerations = gpu_tolerations(NodePool.objects.all())
        requests_asked = [engine_request(w, tolerations=tolerations) for w in asked]
        answered = engine.what_if(end, requests_asked, now=checked.at)
        answers = {a.request_id: a for a in answered}
        unblocking = {
            request.id: alternatives_shown(
                end,
                request,
                workload,
                now=checked.at,
                waits_because=answers[request.id].pending.message,
                # Asked alone, its answer is the one a variant must beat; in a batch, not.
                waiting=answers[request.id] if len(asked) == 1 else None,
            )
            for request, workload in zip(requests_asked, asked, strict=True)
            if not answers[request.id].admitted
        }
    prices = usage_prices(organization_id=project.organization_id, at=checked.at)
    report = []
    for index, workload in enumerate(workloads):
        answer = answers.get(str(workload.pk))
        if answer is None:
            outcome = Outcome.REFUSED
        else:
            outcome = Outcome.ADMITTED if answer.admitted else Outcome.WAITS
        report.append(
            WorkloadWhatIf(
                name=workload.name,
                outcome=outcome,
                answer=answer,
                refusal=refused[index],
                cost=_cost(workload, answer, prices),
                alternatives=unblocking.get(str(workload.pk), ()),
            )
        )
    return WhatIfReport(workloads=report, basis=basis)


def _checks_refusal(*, caller, project, workloads) -> dict[str, list[str]]:
    """What another app's submission check refuses (the whole submission), as field errors."""
    try:
        checks_run(
            ExtensionPoint.WORKLOAD_SUBMISSION, caller=caller, project=project, workloads=workloads
        )
    except Conflict as error:
        return {error.code or "non_field_errors": [str(error)]}
    except ValidationError as error:
        if hasattr(error, "error_dict"):
            return error.message_dict
        return {"non_field_errors": error.messages}
    return {}


def _cost(workload: Workload, answer: engine.WhatIf | None, prices) -> Cost | None:
    """What it would cost at the catalog's prices: on the class it would run on (waiting:
    the class it waits for; refused: its first choice), for its max runtime or an hour."""
    gpu_class = (answer.gpu_class if answer else "") or next(iter(workload.gpu_classes), "")
    if not gpu_class or not workload.needs_gpu:
        return None
    replicas = len(answer.placements) if answer and answer.admitted else workload.replicas
    if workload.mig_count:
        units = Decimal(workload.mig_count)
    elif workload.gpus:
        units = Decimal(workload.gpus)
    else:
        units = Decimal(workload.gpu_milli) / 1000
    span = workload.max_runtime or HOUR
    amount = prices.cost(
        gpu_class=gpu_class,
        mig_profile=workload.mig_profile if workload.mig_count else "",
        tier=workload.tier.name,
        units=units * replicas,
        span=span,
    )
    if amount is None:
        return None
    return Cost(
        amount=amount,
        currency=settings.PORTAL_CURRENCY,
        per="run" if workload.max_runtime else "hour",
    )


def workload_alternatives(*, caller: Caller, workload: Workload) -> tuple[ShownAlternative, ...]:
    """What would unblock a pending workload, soonest start first (none for one not pending,
    nor for one the last cycle did not weigh: held by another app's check, or in its eviction
    backoff). Kept per cycle for a short while."""
    authorize(
        caller=caller, organization=workload.project.organization, action=Action.WORKLOAD_VIEW
    )
    if workload.state != Workload.State.PENDING:
        return ()
    cycle = SchedulerState.objects.filter(pk=1).values_list("last_cycle_at", flat=True).first()
    key = f"scheduling:alternatives:{workload.pk}:{cycle.isoformat() if cycle else ''}"
    shown = cache.get(key)
    if shown is None:
        shown = _alternatives_now(workload, now=clock.now())
        cache.set(key, shown, ALTERNATIVES_CACHE_SECONDS)
    return shown


def _alternatives_now(workload: Workload, *, now: datetime) -> tuple[ShownAlternative, ...]:
    end, _ = cycle_end_now(now=now)
    if workload.submitted_at <= end.decided_at and not end.waits(str(workload.pk)):
        return ()
    request = engine_request(workload, tolerations=gpu_tolerations(NodePool.objects.all()))
    return alternatives_shown(
        end, request, workload, now=now, waits_because=workload.pending_message
    )
