"""What would unblock a waiting request: variants of it the engine has tried, each kept only
when it helps (admitted now, or a start earlier than the request's own).

The variants, each a valid submission (same tier, kind, replicas and gang minimum):
- fewer GPUs per replica: half, a quarter, ... of its whole GPUs, the largest that helps;
  only where the caller says the kind may shrink (``may_shrink``),
- another GPU class: each class of the cluster the request is eligible for (pools, affinity,
  tolerations, and the MIG profile it asks for), the request's own others first,
- MIG instances: one instance per replica of each profile eligible nodes offer, for a request
  of at most one GPU per replica; smaller than what it asks only where it may shrink,
- a later start: the first instant (a running workload's end by its max runtime, or a
  reservation's end) at which it would be admitted on the cluster then,
- a quota request: for a request waiting on quota, the amount missing of the quota resource,
  checked with the quota raised by that amount as an approved request would raise it.

Every variant is one ``answer_of`` call; at most ``MAX_TRIALS`` are made per request.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from .eligibility import ineligibility
from .explain import PendingCode
from .model import (
    MILLI_PER_GPU,
    ClusterSnapshot,
    Quota,
    Request,
    RunningWorkload,
    mig_profile_milli,
)
from .trials import Answer, AnswerOf

# Engine runs per request, whatever the cluster offers: the cost of one explanation.
MAX_TRIALS = 10
# Instants tried for a later start, earliest first.
MAX_LATER_STARTS = 3


class AlternativeKind(StrEnum):
    FEWER_GPUS = "fewer_gpus"
    GPU_CLASS = "gpu_class"
    MIG_PROFILE = "mig_profile"
    LATER_START = "later_start"
    QUOTA_REQUEST = "quota_request"


@dataclass(frozen=True)
class QuotaIncrease:
    """A quota request's fields: ``amount`` more of a class's whole GPUs (``gpus``), GPU
    shares (``shared``, milli-GPU) or instances of a MIG profile (``mig``)."""

    gpu_class: str
    resource: str
    mig_profile: str | None
    amount: int


@dataclass(frozen=True)
class Alternative:
    """A variant that helps: what changed, in words; the request as it would be submitted
    (with ``not_before`` for a later start, ``quota`` for a quota request); the engine's answer;
    its start and its size for a cost: ``units`` of ``gpu_class`` (GPUs, milli-GPU of a share or
    MIG instances of ``mig_profile``, all replicas) for ``runtime`` (None: per hour)."""

    kind: AlternativeKind
    change: str
    request: Request
    answer: Answer
    start: datetime
    not_before: datetime | None = None
    quota: QuotaIncrease | None = None

    @property
    def gpu_class(self) -> str:
        return self.answer.gpu_class or self.request.gpu_classes[0]

    @property
    def replicas(self) -> int:
        return self.answer.replicas or self.request.smallest_gang

    @property
    def units(self) -> int:
        return self.request.quota_amount * self.replicas

    @property
    def gpu_hours(self) -> float | None:
        """GPU-hours over its max runtime (None without one): what a price multiplies."""
        runtime = self.request.max_runtime
        if runtime is None:
            return None
        milli = self.request.gpu_milli_per_replica * self.replicas
        return milli / MILLI_PER_GPU * runtime / timedelta(hours=1)


@dataclass(frozen=True)
class Offer:
    """What the cluster offers a request, read from its schedulable nodes."""

    classes: tuple[str, ...]
    mig_profiles: tuple[tuple[str, str], ...]  # (class, profile), largest profile first


def offer_for(request: Request, snapshot: ClusterSnapshot) -> Offer:
    """The GPU classes and MIG profiles of nodes the request is eligible for whatever their
    class (pools, required affinity, taints it tolerates)."""
    classes: dict[str, None] = {}
    profiles: set[tuple[str, str]] = set()
    for node in snapshot.nodes:
        if not node.gpu_class or ineligibility(
            node=node, request=request, gpu_class=node.gpu_class
        ):
            continue
        classes[node.gpu_class] = None
        profiles.update((node.gpu_class, profile) for profile in node.mig_free)
    own = [c for c in request.gpu_classes if c in classes]
    others = sorted(c for c in classes if c not in own)
    ordered = sorted(profiles, key=lambda cp: (-mig_profile_milli(cp[1]), cp[0], cp[1]))
    return Offer(classes=(*own, *others), mig_profiles=tuple(ordered))


def later_instants(
    snapshot: ClusterSnapshot, running: Sequence[RunningWorkload], *, now: datetime
) -> tuple[datetime, ...]:
    """When capacity frees by the rules the engine knows: running work's ends by its max
    runtime and reservations' ends, after ``now``, earliest first."""
    ends = {w.expected_end for w in running if w.expected_end is not None}
    ends |= {r.ends_at for r in snapshot.reservations}
    return tuple(sorted(t for t in ends if t > now))


def _fewer_gpus(request: Request) -> Iterator[tuple[Request, str]]:
    gpus = request.gpus // 2
    while gpus >= 1:
        yield (
            dataclasses.replace(request, gpus=gpus),
            f"{gpus} GPUs per replica instead of {request.gpus}",
        )
        gpus //= 2


def _other_classes(request: Request, offer: Offer, waits_on: str) -> Iterator[tuple[Request, str]]:
    for gpu_class in offer.classes:
        if request.gpu_classes == (gpu_class,) or gpu_class == waits_on:
            continue
        if request.mig_count and (gpu_class, request.mig_profile) not in offer.mig_profiles:
            continue
        was = waits_on or " or ".join(request.gpu_classes)
        yield (
            dataclasses.replace(request, gpu_classes=(gpu_class,)),
            f"{gpu_class} instead of {was}",
        )


def _mig_profiles(
    request: Request, offer: Offer, *, may_shrink: bool
) -> Iterator[tuple[Request, str]]:
    if request.gpus > 1 or request.mig_count > 1:
        return  # several GPUs' worth per replica: one instance would not be the same work
    asked = request.gpu_milli_per_replica
    for gpu_class, profile in offer.mig_profiles:
        if profile == request.mig_profile or (
            mig_profile_milli(profile) < asked and not may_shrink
        ):
            continue
        variant = dataclasses.replace(
            request, gpus=0, gpu_milli=0, mig_profile=profile, mig_count=1, gpu_classes=(gpu_class,)
        )
        name = profile.removeprefix("mig-")
        yield variant, f"{name} MIG instances of {gpu_class}, one per replica"


def quota_shortfall(
    request: Request,
    snapshot: ClusterSnapshot,
    running: Sequence[RunningWorkload],
    *,
    gpu_class: str,
) -> tuple[Quota, int, int] | None:
    """The tenant's quota of the request's resource on ``gpu_class`` and what is missing of it
    for the gang minimum: above its limit, and above its guarantee (the amount that needs no
    lender); None without a quota to raise."""
    resource = request.quota_resource(gpu_class)
    quota = next(
        (
            q
            for q in snapshot.quotas
            if q.tenant == request.tenant and q.project is None and q.resource == resource
        ),
        None,
    )
    if quota is None:
        return None
    used = sum(
        w.request.quota_amount * len(w.placements)
        for w in running
        if w.request.tenant == request.tenant and w.request.quota_resource(w.gpu_class) == resource
    )
    need = used + request.quota_amount * request.smallest_gang
    return quota, need - quota.limit, need - quota.guarantee


def _quota_increase(quota: Quota, amount: int) -> QuotaIncrease:
    resource = "mig" if quota.mig_profile else "shared" if quota.shared else "gpus"
    return QuotaIncrease(
        gpu_class=quota.gpu_class, resource=resource, mig_profile=quota.mig_profile, amount=amount
    )


def _unit(quota: Quota) -> str:
    if quota.mig_profile:
        return f"{quota.mig_profile} instances"
    return "milli-GPU of shares" if quota.shared else "GPUs"


class _Search:
    """The trials of one request, counted against ``MAX_TRIALS``."""

    def __init__(self, *, request: Request, waiting: Answer, answer_of: AnswerOf, now: datetime):
        self.request, self.waiting, self.answer_of, self.now = request, waiting, answer_of, now
        self.trials = 0
        self.found: list[Alternative] = []

    def helps(self, answer: Answer, *, at: datetime | None = None) -> datetime | None:
        """Its start when ``answer`` beats the request's own: admitted now; or, submitted
        later (``at``), admitted then, sooner than its own estimate; or waiting with an
        estimate sooner than its own."""
        own = self.waiting.estimated_start
        if at is not None:
            return at if answer.admitted and (own is None or at < own) else None
        if answer.admitted:
            return self.now
        start = answer.estimated_start
        return start if start is not None and (own is None or start < own) else None

    def trial(
        self,
        kind: AlternativeKind,
        variant: Request,
        change: str,
        *,
        not_before: datetime | None = None,
        raised: Quota | None = None,
        quota: QuotaIncrease | None = None,
    ) -> bool:
        """Ask the engine about ``variant`` (at ``not_before``, with ``raised`` in place of its
        quota); keep it if it helps."""
        if self.trials >= MAX_TRIALS:
            return False
        self.trials += 1
        answer = self.answer_of(variant, at=not_before, quota=raised)
        start = self.helps(answer, at=not_before)
        if start is None:
            return False
        self.found.append(
            Alternative(kind, change, variant, answer, start, not_before=not_before, quota=quota)
        )
        return True

    def first_that_helps(
        self, kind: AlternativeKind, variants: Iterator[tuple[Request, str]]
    ) -> None:
        for variant, change in variants:
            if self.trial(kind, variant, change):
                return


def alternatives(
    *,
    request: Request,
    waiting: Answer,
    snapshot: ClusterSnapshot,
    running: Sequence[RunningWorkload],
    now: datetime,
    answer_of: AnswerOf,
    may_shrink: bool,
) -> tuple[Alternative, ...]:
    """The variants of ``request`` (pending with ``waiting``) that help, soonest start first.
    ``may_shrink``: whether its kind may run with less GPU per replica than it asks."""
    if waiting.admitted or not request.needs_gpu or waiting.code == PendingCode.INVALID:
        return ()
    fresh = dataclasses.replace(request, submitted_at=now)
    search = _Search(request=request, waiting=waiting, answer_of=answer_of, now=now)
    waits_on = waiting.gpu_class or request.gpu_classes[0]
    if waiting.code == PendingCode.QUOTA:
        _quota_request(search, fresh, snapshot, running, waits_on)
    offer = offer_for(request, snapshot)
    if may_shrink and request.gpus > 1:
        search.first_that_helps(AlternativeKind.FEWER_GPUS, _fewer_gpus(fresh))
    for variant in _other_classes(fresh, offer, waits_on):
        search.trial(AlternativeKind.GPU_CLASS, *variant)
    search.first_that_helps(
        AlternativeKind.MIG_PROFILE, _mig_profiles(fresh, offer, may_shrink=may_shrink)
    )
    for at in later_instants(snapshot, running, now=now)[:MAX_LATER_STARTS]:
        later = dataclasses.replace(request, submitted_at=at)
        change = f"start after {at:%Y-%m-%d %H:%M} UTC"
        if search.trial(AlternativeKind.LATER_START, later, change, not_before=at):
            break
    return tuple(sorted(search.found, key=lambda a: a.start))


def _quota_request(
    search: _Search,
    request: Request,
    snapshot: ClusterSnapshot,
    running: Sequence[RunningWorkload],
    gpu_class: str,
) -> None:
    """The smallest increase that admits it or starts it sooner: the amount over the limit
    (it borrows the rest), else the amount over the guarantee (no lender needed)."""
    shortfall = quota_shortfall(request, snapshot, running, gpu_class=gpu_class)
    if shortfall is None:
        return
    quota, over_limit, over_guarantee = shortfall
    for amount in sorted({a for a in (over_limit, over_guarantee) if a > 0}):
        raised = dataclasses.replace(
            quota, guarantee=quota.guarantee + amount, limit=quota.limit + amount
        )
        change = f"{amount} more {_unit(quota)} of {quota.gpu_class} quota"
        increase = _quota_increase(quota, amount)
        if search.trial(
            AlternativeKind.QUOTA_REQUEST, request, change, raised=raised, quota=increase
        ):
            return
