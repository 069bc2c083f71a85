"""Operators' insights: rules over what the portal measures (the queue, the GPUs' utilization
and memory as monitoring last saw them, reservations) that explain a problem in words, as GPU
operations practice reads them. Each rule answers an `Insight` or nothing; thresholds are
named here. Prometheus alert rules in deploy/ say the same over the metrics."""

from collections import defaultdict
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from portal.events import ExtensionPoint, checks_answers
from portal.templatetags.console import duration
from tenants.permissions import Caller

from . import selectors
from .models import Workload
from .services.following import IDLE_UTILIZATION

# Running work busy below this on average, while work waits: blocked before the GPU.
LOW_UTILIZATION = 0.40
# A queue this long, or a wait this old, is worth an operator's look.
QUEUE_LONG = 5
WAIT_LONG = timedelta(minutes=30)
# One class asked by this share of the waiting GPUs: demand concentrated on one model.
CONCENTRATION = 0.7
# GPU memory this full with compute this idle: batch size or data loading.
MEMORY_FULL = 0.90
COMPUTE_LOW = 0.30
# An active reservation using less than this share of its GPUs, past its first WAIT_LONG.
RESERVED_USED_LOW = 0.5
# A notebook whose GPUs idled this long.
NOTEBOOK_IDLE = timedelta(minutes=30)
# Readings older than this (monitoring stopped answering) are not trusted.
READING_FRESH = timedelta(minutes=10)
SUBJECTS_SHOWN = 10


@dataclass(frozen=True)
class Insight:
    rule: str  # a slug, the same as the alert rule's
    title: str
    finding: str  # what is measured, in words
    advice: str  # what it usually means and what to do
    subjects: list[str] = field(default_factory=list)  # the workloads or reservations concerned
    cluster: str = ""  # the cluster it is about; empty: the whole portal


def insights(*, caller: Caller, now: datetime) -> list[Insight]:
    """Operators: every rule that finds a problem now, this app's and those other apps
    registered (``ExtensionPoint.OPERATOR_INSIGHTS``)."""
    pending = selectors.gpu_workloads_waiting(caller=caller)
    # What monitoring has lately read: older readings (it stopped answering) are not trusted.
    seen = selectors.gpu_workloads_seen(caller=caller, since=now - READING_FRESH)
    # The rules over running work and reservations run per cluster: one cluster's idle GPUs
    # are not another's, and the operator acts on one cluster at a time.
    seen_in: dict[str, list[Workload]] = defaultdict(list)
    for workload in seen:
        seen_in[workload.cluster_name or ""].append(workload)
    reserved_in: dict[str, list] = defaultdict(list)
    for use in selectors.reservations_in_use(now=now):
        reserved_in[use.reservation.pool.cluster.name].append(use)
    per_cluster = [
        replace(insight, cluster=cluster)
        for cluster in sorted(seen_in.keys() | reserved_in.keys())
        for insight in (
            _blocked_before_the_gpu(seen_in[cluster], pending, now),
            _memory_full_compute_idle(seen_in[cluster]),
            _reserved_capacity_idle(reserved_in[cluster], now),
            _idle_notebooks(seen_in[cluster], now),
        )
        if insight is not None
    ]
    found = [
        _demand_on_one_class(pending, now),
        # Other apps' rules (billing: use rated with no price in force).
        *checks_answers(ExtensionPoint.OPERATOR_INSIGHTS, now=now),
    ]
    return per_cluster + [insight for insight in found if insight is not None]


def _name(workload: Workload) -> str:
    return f"{workload.project.organization.slug}/{workload.project.slug}/{workload.name}"


def _percent(fraction: float) -> str:
    return f"{round(fraction * 100)}%"


def _gpus_asked(workload: Workload) -> int:
    """Whole GPUs a request occupies at least: a share or MIG instances count one a
    replica."""
    return (workload.gpus or 1) * workload.replicas


def _blocked_before_the_gpu(
    seen: list[Workload], pending: list[Workload], now: datetime
) -> Insight | None:
    if not seen or not pending:
        return None
    mean = sum(w.gpu_utilization for w in seen) / len(seen)
    oldest = now - min(w.submitted_at for w in pending)
    if mean >= LOW_UTILIZATION or (len(pending) < QUEUE_LONG and oldest < WAIT_LONG):
        return None
    return Insight(
        rule="low_utilization_long_queue",
        title="GPUs held but idle while work waits",
        finding=(
            f"The {len(seen)} running GPU workloads average {_percent(mean)} GPU utilization"
            f" while {len(pending)} wait (the oldest for {duration(oldest)})."
        ),
        advice=(
            "Work is blocked before the GPU: data loading, CPU, storage or network keep the"
            " GPUs waiting. Look at the least busy first; their GPUs would serve the queue."
        ),
        subjects=[f"{_name(w)}: {_percent(w.gpu_utilization)}" for w in seen[:SUBJECTS_SHOWN]],
    )


def _demand_on_one_class(pending: list[Workload], now: datetime) -> Insight | None:
    asked: dict[str, int] = defaultdict(int)
    oldest: dict[str, datetime] = {}
    for workload in pending:
        wanted = workload.gpu_classes[0] if workload.gpu_classes else "any class"
        asked[wanted] += _gpus_asked(workload)
        oldest[wanted] = min(oldest.get(wanted, workload.submitted_at), workload.submitted_at)
    total = sum(asked.values())
    if len(pending) < 2 or not total:
        return None
    wanted, gpus = max(asked.items(), key=lambda item: item[1])
    waited = now - oldest[wanted]
    if gpus / total < CONCENTRATION or waited < WAIT_LONG:
        return None
    idle = [
        f"{gpu_class} has {count} idle"
        for gpu_class, count in sorted(_idle_gpus_by_class().items())
        if gpu_class != wanted and count
    ]
    elsewhere = f" Meanwhile {', '.join(idle)}." if idle else ""
    workloads = sum(
        1 for w in pending if (w.gpu_classes[0] if w.gpu_classes else "any class") == wanted
    )
    return Insight(
        rule="demand_on_one_class",
        title=f"Demand concentrated on {wanted}",
        finding=(
            f"{workloads} of {len(pending)} waiting workloads ask for {wanted} ({gpus} of"
            f" {total} GPUs asked); the oldest has waited {duration(waited)}.{elsewhere}"
        ),
        advice=(
            "Demand is concentrated on one model. Let tenants name a fallback class, move"
            " quota or reservations to the classes with room, or add capacity of this one."
        ),
    )


def _idle_gpus_by_class() -> dict[str, int]:
    idle: dict[str, int] = defaultdict(int)
    for capacity in selectors.cluster_capacity():
        idle[capacity.gpu_class] += capacity.gpus_idle_schedulable
    return idle


def _memory_full_compute_idle(seen: list[Workload]) -> Insight | None:
    stuck = [
        w
        for w in seen
        if w.gpu_memory_used is not None
        and w.gpu_memory_used >= MEMORY_FULL
        and w.gpu_utilization < COMPUTE_LOW
    ]
    if not stuck:
        return None
    return Insight(
        rule="memory_full_compute_idle",
        title="GPU memory full, compute idle",
        finding=(
            f"{len(stuck)} running workload{'s' * (len(stuck) > 1)} fill"
            f"{'s' * (len(stuck) == 1)} at least {_percent(MEMORY_FULL)} of GPU memory but"
            f" use{'s' * (len(stuck) == 1)} under {_percent(COMPUTE_LOW)} of compute."
        ),
        advice=(
            "Usually a batch size chosen to fill memory with kernels too small to keep the GPU"
            " busy, or a data loader that cannot feed it. Profile a step; smaller GPUs, MIG"
            " instances or sharing may serve it as well."
        ),
        subjects=[
            f"{_name(w)}: memory {_percent(w.gpu_memory_used)}, compute"
            f" {_percent(w.gpu_utilization)}"
            for w in stuck[:SUBJECTS_SHOWN]
        ],
    )


def _reserved_capacity_idle(uses: list, now: datetime) -> Insight | None:
    idle = [
        (use.reservation, use.in_use)
        for use in uses
        if use.reservation.starts_at <= now - WAIT_LONG
        and use.in_use < use.reservation.held_gpus * RESERVED_USED_LOW
    ]
    if not idle:
        return None
    return Insight(
        rule="reserved_capacity_idle",
        title="Reserved capacity left idle",
        finding=(
            f"{len(idle)} active reservation{'s' * (len(idle) > 1)} use"
            f"{'s' * (len(idle) == 1)} under {_percent(RESERVED_USED_LOW)} of"
            f" {'their' if len(idle) > 1 else 'its'} GPUs."
        ),
        advice=(
            "Reserved GPUs are billed and kept from others whether used or not. Ask the tenant"
            " whether the work is coming; shorter or smaller reservations, or on-demand quota,"
            " may serve it."
        ),
        subjects=[
            f"{r.organization.slug}: {used:g} of {r.held_gpus} {r.gpu_class.name}"
            f"{' ' + r.mig_profile if r.mig_profile else ''} in {r.pool.name} in use, reserved"
            f" until {r.ends_at:%Y-%m-%d %H:%M} UTC"
            for r, used in idle[:SUBJECTS_SHOWN]
        ],
    )


def _idle_notebooks(seen: list[Workload], now: datetime) -> Insight | None:
    since = now - NOTEBOOK_IDLE
    notebooks = [
        w
        for w in seen
        if w.kind == Workload.Kind.NOTEBOOK and w.idle_since is not None and w.idle_since <= since
    ]
    if not notebooks:
        return None
    held = sum(_gpus_asked(w) for w in notebooks)
    return Insight(
        rule="idle_notebooks",
        title="Idle notebooks holding GPUs",
        finding=(
            f"{len(notebooks)} notebook{'s' * (len(notebooks) > 1)} idle (under"
            f" {_percent(IDLE_UTILIZATION)} GPU utilization) for over {duration(NOTEBOOK_IDLE)}"
            f" hold{'s' * (len(notebooks) == 1)} {held} GPU{'s' * (held > 1)}."
        ),
        advice=(
            "Interactive sessions left open. An idle stop on the notebook tier frees them on"
            " its own; MIG instances or GPU shares suit interactive work better than whole"
            " GPUs."
        ),
        subjects=[
            f"{_name(w)}: idle since {w.idle_since:%Y-%m-%d %H:%M} UTC"
            for w in notebooks[:SUBJECTS_SHOWN]
        ],
    )
