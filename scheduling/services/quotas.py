"""Quotas that operators grant to organizations; their namespaces follow through the worker."""

from django.db import transaction

from portal.events import Event, publish
from tenants.models import Project
from tenants.permissions import (
    Caller,
    require_operator,
)
from tenants.services import audit_record

from ..models import (
    QuotaGrant,
)


def quota_grant_save(*, caller: Caller, grant: QuotaGrant) -> QuotaGrant:
    """An operator sets a quota: validated, audited, and the organization's namespaces get
    their ResourceQuota updated by the worker."""
    require_operator(caller)
    grant.full_clean()
    with transaction.atomic():
        grant.save()
        audit_record(
            caller=caller,
            organization=grant.organization,
            action="quota.set",
            target=grant,
            payload={
                "gpu_class": grant.gpu_class.name,
                "resource": grant.resource,
                "mig_profile": grant.mig_profile,
                "guarantee": grant.guarantee,
                "limit": grant.limit,
                "cohort": grant.cohort,
            },
        )
        _namespaces_follow(grant.organization_id)
    return grant


def quota_grant_delete(*, caller: Caller, grant: QuotaGrant) -> None:
    require_operator(caller)
    with transaction.atomic():
        audit_record(
            caller=caller, organization=grant.organization, action="quota.delete", target=grant
        )
        organization_id = grant.organization_id
        grant.delete()
        _namespaces_follow(organization_id)


def _namespaces_follow(organization_id) -> None:
    """Every live project's namespace quota follows the organization's grants."""
    for project_id in Project.objects.filter(
        organization_id=organization_id, deleted_at__isnull=True
    ).values_list("pk", flat=True):
        publish(Event.PROJECT_CHANGED, project_id=str(project_id))
