"""Reads of scheduling data, scoped to the caller's organizations like every tenant read."""

from collections import Counter
from dataclasses import dataclass

from django.db.models import Prefetch, QuerySet

from portal.errors import NotFound
from tenants.models import Organization, Project
from tenants.permissions import Action, Caller, authorize, role_allows

from .engine.model import quota_resource
from .models import GpuClass, Placement, PriorityTier, QuotaGrant, Workload, WorkloadEvent


def workload_list(*, caller: Caller, project: Project) -> QuerySet[Workload]:
    authorize(caller=caller, organization=project.organization, action=Action.WORKLOAD_VIEW)
    return (
        Workload.objects.filter(project=project)
        .select_related("project__organization", "tier", "gpu_class", "submitted_by")
        .prefetch_related(
            Prefetch(
                "placements",
                queryset=Placement.objects.filter(ended_at__isnull=True).select_related("node"),
                to_attr="active_placements",
            )
        )
        .order_by("-submitted_at")
    )


def workload_get(*, caller: Caller, project: Project, name: str) -> Workload:
    workload = workload_list(caller=caller, project=project).filter(name=name).first()
    if workload is None:
        raise NotFound("No such workload.")
    return workload


def workload_cancel_permitted(*, caller: Caller, workload: Workload, role: str) -> bool:
    """Who may cancel a workload: its submitter, or a role that cancels anyone's work."""
    own = workload.submitted_by_id == caller.user.pk
    return own or role_allows(role, Action.WORKLOAD_CANCEL_ANY)


def workload_events(*, workload: Workload) -> QuerySet[WorkloadEvent]:
    """The timeline of a workload the caller already reached through `workload_get`."""
    return workload.events.order_by("at", "id")


def quota_list(*, caller: Caller, organization: Organization) -> QuerySet[QuotaGrant]:
    authorize(caller=caller, organization=organization, action=Action.ORGANIZATION_VIEW)
    return QuotaGrant.objects.filter(organization=organization).select_related(
        "organization", "project", "gpu_class"
    )


def quota_usage(*, caller: Caller, organization: Organization) -> Counter[tuple[str | None, str]]:
    """What the organization's running work holds of each quota resource, in the resource's
    unit (GPUs, milli-GPU, MIG instances), as the engine counts it: keyed by (None, resource)
    for the organization and (project slug, resource) per project."""
    authorize(caller=caller, organization=organization, action=Action.ORGANIZATION_VIEW)
    usage: Counter[tuple[str | None, str]] = Counter()
    replicas = Placement.objects.filter(
        ended_at__isnull=True,
        workload__project__organization=organization,
        workload__gpu_class__isnull=False,
    ).values_list(
        "workload__project__slug",
        "workload__gpu_class__name",
        "workload__gpus",
        "workload__gpu_milli",
        "workload__mig_profile",
        "workload__mig_count",
    )
    for project, gpu_class, gpus, gpu_milli, mig_profile, mig_count in replicas:
        resource = quota_resource(
            gpu_class, mig_profile=mig_profile or None, shared=bool(gpu_milli)
        )
        usage[(None, resource)] += gpus or gpu_milli or mig_count
        usage[(project, resource)] += gpus or gpu_milli or mig_count
    return usage


@dataclass(frozen=True)
class QuotaUse:
    grant: QuotaGrant
    in_use: int


def quota_overview(*, caller: Caller, organization: Organization) -> list[QuotaUse]:
    """Each of the organization's grants with what its running work holds of it."""
    usage = quota_usage(caller=caller, organization=organization)
    return [
        QuotaUse(
            grant=grant,
            in_use=usage[(grant.usage_scope, grant.engine_resource)],
        )
        for grant in quota_list(caller=caller, organization=organization)
    ]


def gpu_class_list() -> QuerySet[GpuClass]:
    return GpuClass.objects.order_by("name")


def tier_list() -> QuerySet[PriorityTier]:
    return PriorityTier.objects.order_by("-value")
