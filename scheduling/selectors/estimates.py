"""The start estimates' reads: what similar finished work actually ran (the samples the
engine draws running work's remaining time from, read once per cycle) and how well the
estimates held (their calibration per GPU class, for operators)."""

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from scheduling import engine
from scheduling.engine.model import MILLI_PER_GPU, mig_profile_milli
from scheduling.engine.running_ends import runtime_samples as engine_runtime_samples
from tenants.permissions import Caller, require_operator

from ..models import Workload

# Finished work the samples come from: the latest this many, within this many days.
RUNTIME_SAMPLES_MAX = 5_000
RUNTIME_SAMPLES_DAYS = 30
# A bucket with fewer runs than this gives way to a coarser one.
BUCKET_MIN_RUNS = 10
# Work that ran as long as it needed (or to its max runtime); evicted or cancelled work was cut
# short and says nothing of how long it would have run.
RAN_STATES = (Workload.State.SUCCEEDED, Workload.State.FAILED, Workload.State.EXPIRED)
# Estimates judged at most, the latest first.
CALIBRATION_MAX = 20_000
# No floor for an interval's low end when it is unstretched.
EARLIEST = datetime.min.replace(tzinfo=UTC)
# Estimates the intervals' stretch is learnt from, the latest first.
SCALE_JUDGED = 1_000


def _size(gpus: int, gpu_milli: int, mig_profile: str, mig_count: int, replicas: int) -> int:
    """A workload's size: the milli-GPU of its whole gang."""
    milli = gpus * MILLI_PER_GPU or gpu_milli
    if not milli and mig_profile and mig_count:
        milli = mig_count * mig_profile_milli(mig_profile)
    return milli * replicas


def runtime_samples(*, workloads: Iterable, now: datetime, seed: int) -> engine.RuntimeSamples:
    """How long the latest finished work ran (admission to end), by bucket of similar work,
    and the finest bucket with enough runs of each of ``workloads`` (Workloads or cycle rows
    with their project's organization): one bounded query on the finished-at index; with the
    stretch the intervals need (``interval_scale``): one more."""
    finished = (
        Workload.objects.filter(
            state__in=RAN_STATES,
            finished_at__gte=now - timedelta(days=RUNTIME_SAMPLES_DAYS),
            admitted_at__isnull=False,
        )
        .order_by("-finished_at")
        .values_list(
            "project__organization__slug",
            "kind",
            "gpus",
            "gpu_milli",
            "mig_profile",
            "mig_count",
            "replicas",
            "admitted_at",
            "finished_at",
        )[:RUNTIME_SAMPLES_MAX]
    )
    return engine_runtime_samples(
        finished=(
            (tenant, kind, _size(*shape), (finished_at - admitted_at).total_seconds())
            for tenant, kind, *shape, admitted_at, finished_at in finished
        ),
        workloads=(
            (
                str(w.pk),
                w.project.organization.slug,
                w.kind,
                _size(w.gpus, w.gpu_milli, w.mig_profile, w.mig_count, w.replicas),
            )
            for w in workloads
        ),
        min_runs=BUCKET_MIN_RUNS,
        seed=seed,
        interval_scale=interval_scale(now=now),
    )


def interval_scale(*, now: datetime) -> float:
    """How far the draws' intervals must be stretched to hold 80% of starts, judged on the
    latest SCALE_JUDGED first estimates of work that started within RUNTIME_SAMPLES_DAYS, each
    unstretched by the scale it had (a low end held at its estimate's time stays there: the
    miss it measures is an upper bound)."""
    judged = (
        Workload.objects.filter(
            first_estimate_actual__gte=now - timedelta(days=RUNTIME_SAMPLES_DAYS),
            first_estimate__isnull=False,
            first_estimate_low__isnull=False,
        )
        .order_by("-first_estimate_actual")
        .values_list(
            "first_estimate",
            "first_estimate_low",
            "first_estimate_high",
            "first_estimate_scale",
            "first_estimate_actual",
        )[:SCALE_JUDGED]
    )
    return engine.interval_scale(
        [
            (engine.StartRange(likely, low, high).stretched(1 / scale, now=EARLIEST), actual)
            for likely, low, high, scale, actual in judged
        ]
    )


@dataclass(frozen=True)
class ClassCalibration:
    """The calibration of the estimates of work that started on one GPU class ("": all)."""

    gpu_class: str
    estimates: int
    within: float | None
    median_error_seconds: float | None


def estimate_calibration(
    *, caller: Caller, since: datetime, until: datetime
) -> list[ClassCalibration]:
    """How the first estimate of each workload that started between ``since`` and ``until``
    held: overall, then per GPU class (the latest CALIBRATION_MAX starts)."""
    require_operator(caller)
    judged = (
        Workload.objects.filter(
            first_estimate_actual__gte=since,
            first_estimate_actual__lt=until,
            first_estimate__isnull=False,
        )
        .order_by("-first_estimate_actual")
        .values_list(
            "gpu_class__name",
            "first_estimate",
            "first_estimate_low",
            "first_estimate_high",
            "first_estimate_actual",
        )[:CALIBRATION_MAX]
    )
    by_class: dict[str, list] = defaultdict(list)
    for gpu_class, likely, low, high, actual in judged:
        pair = (engine.StartRange(likely=likely, low=low or likely, high=high), actual)
        by_class[""].append(pair)
        if gpu_class:
            by_class[gpu_class].append(pair)
    return [
        ClassCalibration(gpu_class, figures.estimates, figures.within, figures.median_error_seconds)
        for gpu_class in ["", *sorted(c for c in by_class if c)]
        for figures in [engine.calibration(by_class[gpu_class])]
    ]
