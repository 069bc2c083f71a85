"""Reads of quotas: an organization's grants with what its running work holds of them, what it
asked for, and what its grants will be once the increases approved for later start."""

from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q, QuerySet

from portal.db import one_or_not_found
from tenants.models import Organization
from tenants.permissions import Action, Caller, authorize, require_operator

from ..engine.model import quota_resource
from ..models import Placement, QuotaGrant, QuotaGrantHistory, QuotaRequest, SchedulerState


def quota_list(*, caller: Caller, organization: Organization) -> QuerySet[QuotaGrant]:
    authorize(caller=caller, organization=organization, action=Action.ORGANIZATION_VIEW)
    return QuotaGrant.objects.filter(organization=organization).select_related(
        "organization", "project", "gpu_class"
    )


def quota_grant_history(
    *, gpu_class, starts_at: datetime, ends_at: datetime
) -> QuerySet[QuotaGrantHistory]:
    """The class's grants as they stood over [starts_at, ends_at): each span of a grant's
    guarantee and limit that overlaps it, by start (the operator's books read them)."""
    return QuotaGrantHistory.objects.filter(
        Q(valid_to__isnull=True) | Q(valid_to__gt=starts_at),
        gpu_class=gpu_class,
        valid_from__lt=ends_at,
    ).order_by("valid_from", "id")


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
    # For the organization's own grants (None for a project's, or before any cycle): what it
    # holds above its guarantee, and what more it could borrow, as the last cycle left them.
    borrowed: int | None = None
    borrowable: int | None = None


def quota_overview(*, caller: Caller, organization: Organization) -> list[QuotaUse]:
    """Each of the organization's grants with what its running work holds of it, and for its
    own grants what it borrows and could still borrow, as the last scheduling cycle counted
    them (the engine's ledger over the whole cluster, too costly to build per page)."""
    usage = quota_usage(caller=caller, organization=organization)
    state = SchedulerState.objects.filter(pk=1).only("quota_standings").first()
    standings = state.quota_standings.get(organization.slug, {}) if state else {}
    overview = []
    for grant in quota_list(caller=caller, organization=organization):
        in_use = usage[(grant.usage_scope, grant.engine_resource)]
        standing = standings.get(grant.engine_resource) if grant.project_id is None else None
        borrowed, borrowable = standing if standing else (None, None)
        overview.append(
            QuotaUse(grant=grant, in_use=in_use, borrowed=borrowed, borrowable=borrowable)
        )
    return overview


def quota_class_most_granted(*, caller: Caller, organization: Organization) -> str | None:
    """The GPU class the organization's quotas allow the most whole GPUs of, by name (the first
    by name among equals; None when they allow none): what its submit form offers first."""
    return (
        quota_list(caller=caller, organization=organization)
        .filter(resource=QuotaGrant.Resource.GPUS, limit__gt=0)
        .order_by("-limit", "gpu_class__name")
        .values_list("gpu_class__name", flat=True)
        .first()
    )


def quota_request_for_operator(*, caller: Caller, pk) -> QuotaRequest:
    """Any organization's quota request, for an operator's decision."""
    require_operator(caller)
    requests = QuotaRequest.objects.select_related("organization")
    return one_or_not_found(requests, pk, "quota request")


def quota_request_list(*, caller: Caller, organization: Organization) -> QuerySet[QuotaRequest]:
    authorize(caller=caller, organization=organization, action=Action.ORGANIZATION_VIEW)
    return QuotaRequest.objects.filter(organization=organization).select_related(
        "organization", "project", "gpu_class", "requested_by"
    )


def quota_request_get(*, caller: Caller, organization: Organization, pk) -> QuotaRequest:
    return one_or_not_found(
        quota_request_list(caller=caller, organization=organization), pk, "quota request"
    )


def quota_grants_to_come(*, organization: Organization) -> list[QuotaGrant]:
    """The organization's grants as they will be once its approved increases that have not
    started yet (a quota package bought for a later period) count: unsaved copies, for what
    submission may queue to wait for them."""
    grants = {
        (g.project_id, g.gpu_class_id, g.resource, g.mig_profile): g
        for g in QuotaGrant.objects.filter(organization=organization).select_related(
            "organization", "project", "gpu_class"
        )
    }
    ahead = QuotaRequest.objects.filter(
        organization=organization, state=QuotaRequest.State.APPROVED, applied_at__isnull=True
    ).select_related("organization", "project", "gpu_class")
    for increase in ahead:
        key = (increase.project_id, increase.gpu_class_id, increase.resource, increase.mig_profile)
        grant = grants.get(key) or QuotaGrant(
            organization=increase.organization,
            project=increase.project,
            gpu_class=increase.gpu_class,
            resource=increase.resource,
            mig_profile=increase.mig_profile,
            guarantee=0,
            limit=0,
        )
        grants[key] = grant
        grant.guarantee += increase.granted_amount or 0
        grant.limit += increase.granted_amount or 0
    return list(grants.values())
