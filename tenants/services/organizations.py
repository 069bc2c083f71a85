"""Organizations: create, rename, delete; operators suspend and reactivate them."""

from decimal import Decimal

from django.db import transaction

from portal.errors import Conflict, Forbidden

from ..models import AuditEvent, Membership, Organization, Role
from ..permissions import Action, Caller, authorize, require_operator
from .audit import audit_record
from .common import apply_changes, insert, validated

# Organizations


@transaction.atomic
def organization_create(
    *, caller: Caller, slug: str, name: str, billing_email: str = ""
) -> Organization:
    if not caller.can_write:
        raise Forbidden("This API token is read-only.")
    if caller.token is not None:
        raise Forbidden("API tokens belong to one organization; create others signed in.")
    organization = validated(Organization(slug=slug, name=name, billing_email=billing_email))
    insert(organization, field="slug", message="This slug was just taken; choose another.")
    owner = Membership.objects.create(organization=organization, user=caller.user, role=Role.OWNER)
    audit_record(
        caller=caller,
        organization=organization,
        action="organization.create",
        target=organization,
        payload={"slug": slug, "name": name},
    )
    audit_record(
        caller=caller,
        organization=organization,
        action="member.add",
        target=owner,
        payload={"role": Role.OWNER},
    )
    return organization


@transaction.atomic
def organization_update(
    *,
    caller: Caller,
    organization: Organization,
    name: str | None = None,
    billing_email: str | None = None,
    time_zone: str | None = None,
) -> Organization:
    authorize(caller=caller, organization=organization, action=Action.ORGANIZATION_UPDATE)
    return _organization_change(
        caller=caller,
        organization=organization,
        name=name,
        billing_email=billing_email,
        time_zone=time_zone,
    )


@transaction.atomic
def organization_update_by_operator(
    *,
    caller: Caller,
    organization: Organization,
    name: str | None = None,
    billing_email: str | None = None,
    time_zone: str | None = None,
    fair_share_weight: Decimal | None = None,
) -> Organization:
    """An operator changes an organization (in admin): what its owners may change, under the
    same rules, and the fair-share weight that only operators set; audited alike."""
    require_operator(caller)
    return _organization_change(
        caller=caller,
        organization=organization,
        name=name,
        billing_email=billing_email,
        time_zone=time_zone,
        fair_share_weight=fair_share_weight,
    )


def _plain(value):
    """A value as the audit payload (JSON) keeps it: amounts as decimal strings."""
    return str(value) if isinstance(value, Decimal) else value


def _organization_change(*, caller: Caller, organization: Organization, **values) -> Organization:
    changes = apply_changes(organization, **values)
    if changes:
        validated(organization).save()
        audit_record(
            caller=caller,
            organization=organization,
            action="organization.update",
            target=organization,
            payload={
                field: {end: _plain(value) for end, value in change.items()}
                for field, change in changes.items()
            },
        )
    return organization


@transaction.atomic
def organization_delete(*, caller: Caller, organization: Organization) -> None:
    authorize(caller=caller, organization=organization, action=Action.ORGANIZATION_DELETE)
    if organization.projects.filter(deleted_at__isnull=True).exists():
        raise Conflict(
            "Delete the organization's projects first; their workloads and namespaces go with "
            "them.",
            code="organization_has_projects",
        )
    # The trail of a deleted organization is kept for operators, detached from it.
    audit_record(
        caller=caller,
        organization=None,
        action="organization.delete",
        target=organization,
        payload={"slug": organization.slug},
    )
    AuditEvent.objects.filter(organization=organization).update(organization=None)
    organization.delete()


def _organization_status_set(
    *, caller: Caller, organization: Organization, status: str, action: str, reason: str
) -> Organization:
    require_operator(caller)
    organization = Organization.objects.select_for_update().get(pk=organization.pk)
    if organization.status == status:
        return organization
    organization.status = status
    organization.status_reason = reason[:200]
    organization.save(update_fields=["status", "status_reason", "updated_at"])
    audit_record(
        caller=caller,
        organization=organization,
        action=action,
        target=organization,
        payload={"reason": reason},
    )
    return organization


@transaction.atomic
def organization_suspend(
    *, caller: Caller, organization: Organization, reason: str = ""
) -> Organization:
    return _organization_status_set(
        caller=caller,
        organization=organization,
        status=Organization.Status.SUSPENDED,
        action="organization.suspend",
        reason=reason,
    )


@transaction.atomic
def organization_reactivate(*, caller: Caller, organization: Organization) -> Organization:
    return _organization_status_set(
        caller=caller,
        organization=organization,
        status=Organization.Status.ACTIVE,
        action="organization.reactivate",
        reason="",
    )
