"""The preemption contract's records: what each eviction gave its workload (the notice) and what
it cost it (the work since its last checkpoint), and the checkpoints workloads report."""

from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import transaction

from portal import clock
from portal.errors import Conflict, Forbidden
from tenants.permissions import Action, Caller, caller_role, role_allows

from .. import engine
from ..models import Eviction, Placement, PriorityTier, Workload
from .timeline import workload_event

_MILLI = Decimal(engine.model.MILLI_PER_GPU)
_THOUSANDTH = Decimal("0.001")  # a milli-GPU for a second: lost work is exact at this scale


def _replica_amounts(workload: Workload) -> tuple[int, int]:
    """What one replica holds: in its metered resource's unit (whole GPUs, milli-GPU of a share,
    MIG instances), and in milli-GPU."""
    if workload.gpus:
        return workload.gpus, workload.gpus * engine.model.MILLI_PER_GPU
    if workload.gpu_milli:
        return workload.gpu_milli, workload.gpu_milli
    if workload.mig_profile and workload.mig_count:
        milli = workload.mig_count * engine.model.mig_profile_milli(workload.mig_profile)
        return workload.mig_count, milli
    return 0, 0


def evictions_record(
    victims: Sequence[Workload],
    *,
    reasons: Mapping[str, str],
    codes: Mapping[str, str],
    preempted_by: Mapping[str, str | None],
    requeued: Sequence[Workload],
    now: datetime,
) -> dict[str, tuple[str, dict]]:
    """Write an Eviction per victim (locked, still holding its placements) and answer, per
    workload id, the timeline's message (the reason, the notice and the work lost) and data.
    ``codes``: the engine's reason per victim ("priority", "reclaim", "reservation", ...)."""
    tiers = PriorityTier.objects.in_bulk({w.tier_id for w in victims})
    running: dict = {}
    for placement in Placement.objects.filter(
        workload__in=victims, ended_at__isnull=True, running_at__isnull=False
    ).only("workload_id", "running_at"):
        running.setdefault(placement.workload_id, []).append(placement.running_at)
    requeued_ids = {w.pk for w in requeued}
    records, timeline = [], {}
    for workload in victims:
        key = str(workload.pk)
        started = workload.started_at or workload.admitted_at
        since = (
            engine.lost_since(
                started_at=started,
                now=now,
                last_checkpoint=workload.last_checkpoint_at,
                checkpoint_interval=workload.checkpoint_interval,
            )
            if started
            else None
        )
        unit, milli = _replica_amounts(workload)
        seconds = sum(
            max(int((now - max(at, since or at)).total_seconds()), 0)
            for at in running.get(workload.pk, ())
        )
        lost = (Decimal(milli * seconds) / _MILLI).quantize(_THOUSANDTH)
        notice = tiers[workload.tier_id].notice
        records.append(
            Eviction(
                workload=workload,
                at=now,
                reason=codes.get(key, "")[:32],
                preempted_by_id=preempted_by.get(key),
                notice_seconds=notice,
                gpu_class_id=workload.gpu_class_id,
                mig_profile=workload.mig_profile if workload.mig_count else "",
                lost_since=since,
                resource_seconds_lost=unit * seconds,
                gpu_seconds_lost=lost,
                requeued=workload.pk in requeued_ids,
            )
        )
        checkpoint = (
            f"its checkpoint at {since:%H:%M:%S} UTC"
            if since and since != started
            else "its start (no checkpoint)"
        )
        message = (
            f"{reasons[key]} Notice: {notice} s; work lost: {lost.normalize():f} GPU-seconds"
            f" since {checkpoint}."
        )
        timeline[key] = (
            message,
            {
                "notice_seconds": notice,
                "lost_since": since.isoformat() if since else None,
                "gpu_seconds_lost": f"{lost:f}",
            },
        )
    Eviction.objects.bulk_create(records)
    return timeline


def workload_checkpoint_report(
    *, caller: Caller, workload: Workload, at: datetime | None = None
) -> Workload:
    """A running workload saved a checkpoint at ``at`` (default: now): evicted later, it loses
    only the work since. Members and above of its organization may report it."""
    role = caller_role(caller=caller, organization=workload.project.organization)
    if not role_allows(role, Action.WORKLOAD_SUBMIT):
        raise Forbidden("Viewers cannot report checkpoints.")
    if not caller.can_write:
        raise Forbidden("This API token is read-only.")
    now = clock.now()
    at = at or now
    if at > now:
        raise ValidationError({"at": ["A checkpoint cannot be in the future."]})
    with transaction.atomic():
        workload = Workload.objects.select_for_update().get(pk=workload.pk)
        if not workload.is_active:
            raise Conflict(
                f"The workload is {workload.state}: only running work checkpoints.",
                code="workload_not_running",
            )
        started = workload.started_at or workload.admitted_at
        if at < started:
            raise ValidationError({"at": ["The checkpoint is before the workload started."]})
        if workload.last_checkpoint_at is None or at > workload.last_checkpoint_at:
            workload.last_checkpoint_at = at
            workload.save(update_fields=["last_checkpoint_at"])
            workload_event(
                workload, "checkpoint", f"Checkpoint saved at {at:%H:%M:%S} UTC.", at=now
            ).save()
    return workload
