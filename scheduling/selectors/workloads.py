"""Reads of workloads: a project's, for its members; the placements that ran, for billing's
metering."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Prefetch, Q, QuerySet

from portal.errors import NotFound
from tenants.models import Organization, Project
from tenants.permissions import Action, Caller, authorize, role_allows

from ..models import Eviction, Placement, Workload, WorkloadEvent


def workloads_as_shown(workloads: QuerySet[Workload]) -> QuerySet[Workload]:
    """`workloads` with what the API shows of each (its project, tier, class, submitter and
    active placements) read at once: for the API's list, and for webhooks' deliveries."""
    return workloads.select_related(
        "project__organization", "tier", "gpu_class", "submitted_by"
    ).prefetch_related(
        Prefetch(
            "placements",
            queryset=Placement.objects.filter(ended_at__isnull=True).select_related(
                "node__pool__cluster"
            ),
            to_attr="active_placements",
        )
    )


def workload_list(*, caller: Caller, project: Project) -> QuerySet[Workload]:
    authorize(caller=caller, organization=project.organization, action=Action.WORKLOAD_VIEW)
    return workloads_as_shown(Workload.objects.filter(project=project)).order_by("-submitted_at")


def organization_workloads(*, caller: Caller, organization: Organization) -> QuerySet[Workload]:
    """The workloads of every live project of the organization, for any of its members."""
    authorize(caller=caller, organization=organization, action=Action.WORKLOAD_VIEW)
    return Workload.objects.filter(
        project__organization=organization, project__deleted_at__isnull=True
    ).select_related("project", "tier", "gpu_class")


def workload_get(*, caller: Caller, project: Project, name: str) -> Workload:
    workload = workload_list(caller=caller, project=project).filter(name=name).first()
    if workload is None:
        raise NotFound("No such workload.")
    return workload


def workload_cancel_permitted(*, caller: Caller, workload: Workload, role: str) -> bool:
    """Who may cancel a workload: its submitter, or a role that cancels anyone's work."""
    own = workload.submitted_by_id == caller.user.pk
    return own or role_allows(role, Action.WORKLOAD_CANCEL_ANY)


@dataclass(frozen=True)
class WorkloadClock:
    """How long a workload has waited and run, and how long it may still run."""

    waited: timedelta  # submission to start, or to now while it waits
    elapsed: timedelta | None  # start to finish, or to now while it runs; None before start
    remaining: timedelta | None  # to its maximum runtime while it runs; None without one


def workload_clock(workload: Workload, *, now: datetime) -> WorkloadClock:
    """``workload``'s waiting, running and remaining time at ``now``."""
    if workload.started_at is None:
        end_of_wait = workload.finished_at or now
        return WorkloadClock(
            waited=end_of_wait - workload.submitted_at, elapsed=None, remaining=None
        )
    end = workload.finished_at or now
    remaining = None
    if workload.expected_end and not workload.is_final:
        remaining = max(workload.expected_end - now, timedelta(0))
    return WorkloadClock(
        waited=workload.started_at - workload.submitted_at,
        elapsed=end - workload.started_at,
        remaining=remaining,
    )


def workload_events(*, workload: Workload) -> QuerySet[WorkloadEvent]:
    """The timeline of a workload the caller already reached through `workload_get`."""
    return workload.events.order_by("at", "id")


def placements_ran(*, since_pk: int = 0) -> QuerySet[Placement]:
    """GPU placements that ran (the cluster reported them running), past ``since_pk``, with
    what metering needs of their workload, project, node and tier: billing's source of
    truth for usage. GPU ones by their node's pool, not their workload's class, which an
    eviction that requeues clears."""
    return (
        Placement.objects.filter(
            Q(workload__gpus__gt=0) | Q(workload__gpu_milli__gt=0) | Q(mig_count__gt=0),
            pk__gt=since_pk,
            running_at__isnull=False,
            node__pool__gpu_class__isnull=False,
        )
        .select_related("workload__project", "workload__tier", "node__pool")
        .order_by("pk")
    )


def placements_ended() -> QuerySet[Placement]:
    """Placements that ended (released their GPUs), for metering to close their intervals."""
    return Placement.objects.filter(ended_at__isnull=False)


def evictions_since(*, since: datetime) -> QuerySet[Eviction]:
    """Evictions from ``since`` on, with their workload's project and tier and the workload
    they were evicted for: what billing credits lost work from."""
    return (
        Eviction.objects.filter(at__gte=since)
        .select_related("workload__project", "workload__tier", "preempted_by")
        .order_by("at", "pk")
    )
