"""Every write to tenancy: one transactional function per use case, each leaving an AuditEvent."""

import hashlib
import secrets
from datetime import datetime, timedelta

from allauth.account.models import EmailAddress
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from .models import (
    NAMESPACE_MAX,
    ApiToken,
    AuditEvent,
    Invitation,
    Membership,
    Organization,
    Project,
    Role,
)
from .permissions import Action, Caller, authorize, caller_role, require_operator, role_allows

INVITATION_LIFETIME = timedelta(days=7)
INVITATION_SALT = "tenants.invitation"
TOKEN_PREFIX = "gcp"


class Conflict(Exception):
    """The request is valid but the current state forbids it (answered as 409)."""

    def __init__(self, message: str, *, code: str = "conflict"):
        super().__init__(message)
        self.message = message
        self.code = code


def audit_record(
    *,
    caller: Caller | None,
    organization: Organization | None,
    action: str,
    target: object,
    payload: dict | None = None,
) -> AuditEvent:
    user = caller.user if caller else None
    return AuditEvent.objects.create(
        organization=organization,
        actor=user,
        actor_email=getattr(user, "email", "") or "",
        via_token=caller.token if caller else None,
        action=action,
        target_type=type(target).__name__.lower(),
        target_id=str(target.pk),
        target_label=str(target)[:200],
        payload=payload or {},
    )


def _validated(instance, *, exclude: list[str] | None = None):
    """Run field validation (validators, choices, unique fields) before writing.

    Multi-column constraints are checked by each service with a message that names the field;
    the database still enforces them against races.
    """
    instance.full_clean(exclude=exclude, validate_constraints=False)
    return instance


def _apply_changes(instance, **values) -> dict:
    """Set the values given (None: keep); what changed, as {field: {"from": …, "to": …}}."""
    changes = {}
    for field, value in values.items():
        if value is not None and getattr(instance, field) != value:
            changes[field] = {"from": getattr(instance, field), "to": value}
            setattr(instance, field, value)
    return changes


def _insert(instance, *, field: str, message: str):
    """Save; a concurrent request that won the race on a unique key is a field error."""
    try:
        with transaction.atomic():
            instance.save()
    except IntegrityError as error:
        raise ValidationError({field: message}) from error
    return instance


# Organizations


@transaction.atomic
def organization_create(
    *, caller: Caller, slug: str, name: str, billing_email: str = ""
) -> Organization:
    if not caller.can_write:
        raise PermissionDenied("This API token is read-only.")
    if caller.token is not None:
        raise PermissionDenied("API tokens belong to one organization; create others signed in.")
    organization = _validated(Organization(slug=slug, name=name, billing_email=billing_email))
    _insert(organization, field="slug", message="This slug was just taken; choose another.")
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
) -> Organization:
    authorize(caller=caller, organization=organization, action=Action.ORGANIZATION_UPDATE)
    changes = _apply_changes(organization, name=name, billing_email=billing_email)
    if changes:
        _validated(organization).save()
        audit_record(
            caller=caller,
            organization=organization,
            action="organization.update",
            target=organization,
            payload=changes,
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


# Members and invitations


def invitation_token(invitation: Invitation) -> str:
    """The secret part of the invitation link: the invitation's id, signed.

    No timestamp in it: the same invitation always has the same link; its expiry is kept in the
    database, where revoking can end it too.
    """
    return signing.Signer(salt=INVITATION_SALT).sign_object(str(invitation.pk))


def invitation_url(invitation: Invitation) -> str:
    path = reverse("console:invitation", kwargs={"token": invitation_token(invitation)})
    return settings.PORTAL_BASE_URL.rstrip("/") + path


def _require_role_grant(*, caller: Caller, organization: Organization, role: str) -> None:
    if role == Role.OWNER:
        authorize(caller=caller, organization=organization, action=Action.OWNER_MANAGE)


@transaction.atomic
def member_invite(
    *, caller: Caller, organization: Organization, email: str, role: str
) -> Invitation:
    authorize(caller=caller, organization=organization, action=Action.MEMBER_INVITE)
    _require_role_grant(caller=caller, organization=organization, role=role)
    email = email.strip()
    if Membership.objects.filter(organization=organization, user__email__iexact=email).exists():
        raise ValidationError({"email": f"{email} is already a member of {organization.slug}."})
    now = timezone.now()
    # An expired invitation that is still open blocks nothing: it is revoked by the new one.
    Invitation.objects.filter(
        organization=organization,
        email__iexact=email,
        accepted_at__isnull=True,
        revoked_at__isnull=True,
        expires_at__lte=now,
    ).update(revoked_at=now)
    invitation = Invitation(
        organization=organization,
        email=email,
        role=role,
        invited_by=caller.user,
        created_at=now,
        expires_at=now + INVITATION_LIFETIME,
    )
    _validated(invitation, exclude=["invited_by"])
    if Invitation.objects.filter(
        organization=organization,
        email__iexact=email,
        accepted_at__isnull=True,
        revoked_at__isnull=True,
    ).exists():
        raise ValidationError({"email": f"{email} already has an open invitation."})
    _insert(invitation, field="email", message=f"{email} already has an open invitation.")
    audit_record(
        caller=caller,
        organization=organization,
        action="invitation.create",
        target=invitation,
        payload={"email": email, "role": role},
    )
    from .tasks import invitation_email_send as send_task

    invitation_id = str(invitation.pk)
    transaction.on_commit(lambda: send_task.delay(invitation_id))
    return invitation


def invitation_email_send(*, invitation_id: str) -> bool:
    """Mail the invitation link; idempotent: an invitation is mailed at most once."""
    with transaction.atomic():
        invitation = (
            Invitation.objects.select_for_update(of=("self",))
            .select_related("organization", "invited_by")
            .filter(pk=invitation_id, sent_at__isnull=True)
            .first()
        )
        if invitation is None or invitation.state() != "pending":
            return False
        context = {
            "invitation": invitation,
            "organization": invitation.organization,
            "inviter": invitation.invited_by,
            "url": invitation_url(invitation),
        }
        send_mail(
            subject=f"You are invited to {invitation.organization.name} on GPU Cloud",
            message=render_to_string("tenants/email/invitation.txt", context),
            from_email=None,
            recipient_list=[invitation.email],
        )
        invitation.sent_at = timezone.now()
        invitation.save(update_fields=["sent_at"])
    return True


@transaction.atomic
def invitation_revoke(*, caller: Caller, invitation: Invitation) -> Invitation:
    authorize(caller=caller, organization=invitation.organization, action=Action.MEMBER_INVITE)
    _require_role_grant(caller=caller, organization=invitation.organization, role=invitation.role)
    invitation = Invitation.objects.select_for_update().get(pk=invitation.pk)
    if invitation.state() != "pending":
        raise Conflict(f"The invitation is {invitation.state()}.", code="invitation_not_pending")
    invitation.revoked_at = timezone.now()
    invitation.save(update_fields=["revoked_at"])
    audit_record(
        caller=caller,
        organization=invitation.organization,
        action="invitation.revoke",
        target=invitation,
    )
    return invitation


def invitation_from_token(token: str) -> Invitation:
    """The invitation a link points to; ValidationError for a forged or mangled link."""
    try:
        invitation_id = signing.Signer(salt=INVITATION_SALT).unsign_object(token)
    except signing.BadSignature as error:
        raise ValidationError({"token": "This invitation link is not valid."}) from error
    invitation = (
        Invitation.objects.select_related("organization", "invited_by")
        .filter(pk=invitation_id)
        .first()
    )
    if invitation is None:
        raise ValidationError({"token": "This invitation no longer exists."})
    return invitation


@transaction.atomic
def invitation_accept(*, user, token: str) -> Membership:
    invitation = invitation_from_token(token)
    invitation = (
        Invitation.objects.select_for_update(of=("self",))
        .select_related("organization")
        .get(pk=invitation.pk)
    )
    state = invitation.state()
    if state != "pending":
        raise Conflict(f"This invitation is {state}.", code=f"invitation_{state}")
    if invitation.email.lower() != (user.email or "").lower():
        raise PermissionDenied(
            f"This invitation is for {invitation.email}; sign in with that address to accept it."
        )
    if not invitation.organization.is_active:
        raise Conflict(
            f"Organization {invitation.organization.slug} is suspended.",
            code="organization_suspended",
        )
    membership, created = Membership.objects.get_or_create(
        organization=invitation.organization, user=user, defaults={"role": invitation.role}
    )
    if not created:
        raise Conflict("You are already a member of this organization.", code="already_member")
    invitation.accepted_at = timezone.now()
    invitation.accepted_by = user
    invitation.save(update_fields=["accepted_at", "accepted_by"])
    caller = Caller(user=user)
    audit_record(
        caller=caller,
        organization=invitation.organization,
        action="invitation.accept",
        target=invitation,
    )
    audit_record(
        caller=caller,
        organization=invitation.organization,
        action="member.add",
        target=membership,
        payload={"role": membership.role},
    )
    return membership


def _lock_owners(organization: Organization) -> list[Membership]:
    """Lock the owner rows so two concurrent demotions cannot leave no owner at all."""
    return list(
        Membership.objects.select_for_update().filter(organization=organization, role=Role.OWNER)
    )


@transaction.atomic
def member_role_change(*, caller: Caller, membership: Membership, role: str) -> Membership:
    organization = membership.organization
    authorize(caller=caller, organization=organization, action=Action.MEMBER_ROLE_CHANGE)
    if role not in Role.values:
        raise ValidationError({"role": f"'{role}' is not a role: use one of {Role.values}."})
    owners = _lock_owners(organization)
    membership = Membership.objects.select_for_update().get(pk=membership.pk)
    if membership.role == role:
        return membership
    if Role.OWNER in (role, membership.role):
        authorize(caller=caller, organization=organization, action=Action.OWNER_MANAGE)
    if membership.role == Role.OWNER and len(owners) == 1:
        raise Conflict(
            "An organization keeps at least one owner: make someone else owner first.",
            code="last_owner",
        )
    previous = membership.role
    membership.role = role
    membership.save(update_fields=["role"])
    audit_record(
        caller=caller,
        organization=organization,
        action="member.role_change",
        target=membership,
        payload={"from": previous, "to": role},
    )
    return membership


@transaction.atomic
def member_remove(*, caller: Caller, membership: Membership) -> None:
    organization = membership.organization
    leaving_self = membership.user_id == caller.user.pk
    if leaving_self:
        authorize(caller=caller, organization=organization, action=Action.MEMBER_VIEW)
        if not caller.can_write:
            raise PermissionDenied("This API token is read-only.")
    else:
        authorize(caller=caller, organization=organization, action=Action.MEMBER_REMOVE)
    owners = _lock_owners(organization)
    membership = (
        Membership.objects.select_for_update(of=("self",))
        .select_related("user")
        .get(pk=membership.pk)
    )
    if membership.role == Role.OWNER:
        if not leaving_self:
            authorize(caller=caller, organization=organization, action=Action.OWNER_MANAGE)
        if len(owners) == 1:
            raise Conflict(
                "An organization keeps at least one owner: make someone else owner first.",
                code="last_owner",
            )
    # Tokens reach the organization through the membership: they end with it.
    now = timezone.now()
    ApiToken.objects.filter(
        organization=organization, owner=membership.user, revoked_at__isnull=True
    ).update(revoked_at=now)
    audit_record(
        caller=caller,
        organization=organization,
        action="member.leave" if leaving_self else "member.remove",
        target=membership,
        payload={"email": membership.user.email, "role": membership.role},
    )
    membership.delete()


# Projects


def project_namespace(*, organization_slug: str, project_slug: str) -> str:
    return f"{organization_slug}-{project_slug}"


@transaction.atomic
def project_create(
    *, caller: Caller, organization: Organization, slug: str, name: str, description: str = ""
) -> Project:
    authorize(caller=caller, organization=organization, action=Action.PROJECT_CREATE)
    namespace = project_namespace(organization_slug=organization.slug, project_slug=slug)
    project = Project(
        organization=organization,
        slug=slug,
        name=name,
        description=description,
        namespace=namespace,
        created_by=caller.user,
    )
    _validated(project, exclude=["namespace", "created_by"])
    live = Project.objects.filter(deleted_at__isnull=True)
    if live.filter(organization=organization, slug=slug).exists():
        raise ValidationError({"slug": f"{organization.slug} already has a project {slug!r}."})
    if len(namespace) > NAMESPACE_MAX:
        raise ValidationError(
            {"slug": f"The namespace {namespace!r} would exceed {NAMESPACE_MAX} characters."}
        )
    if live.filter(namespace=namespace).exists():
        raise ValidationError(
            {"slug": f"The Kubernetes namespace {namespace!r} is taken; choose another slug."}
        )
    _insert(project, field="slug", message="This slug was just taken; choose another.")
    from scheduling.tasks import project_provision

    project_id = str(project.pk)
    transaction.on_commit(lambda: project_provision.delay(project_id))
    audit_record(
        caller=caller,
        organization=organization,
        action="project.create",
        target=project,
        payload={"slug": slug, "name": name, "namespace": namespace},
    )
    return project


@transaction.atomic
def project_update(
    *, caller: Caller, project: Project, name: str | None = None, description: str | None = None
) -> Project:
    authorize(caller=caller, organization=project.organization, action=Action.PROJECT_UPDATE)
    changes = _apply_changes(project, name=name, description=description)
    if changes:
        _validated(project, exclude=["created_by"]).save()
        audit_record(
            caller=caller,
            organization=project.organization,
            action="project.update",
            target=project,
            payload=changes,
        )
    return project


@transaction.atomic
def project_delete(*, caller: Caller, project: Project) -> None:
    """Hide the project at once; a worker then stops its workloads and removes its namespace."""
    authorize(caller=caller, organization=project.organization, action=Action.PROJECT_DELETE)
    project.deleted_at = timezone.now()
    project.save(update_fields=["deleted_at", "updated_at"])
    audit_record(
        caller=caller,
        organization=project.organization,
        action="project.delete",
        target=project,
        payload={"namespace": project.namespace},
    )
    from scheduling.tasks import project_deprovision

    project_id = str(project.pk)
    transaction.on_commit(lambda: project_deprovision.delay(project_id))


# API tokens


def _token_digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@transaction.atomic
def token_issue(
    *,
    caller: Caller,
    organization: Organization,
    name: str,
    scope: str = ApiToken.Scope.READ,
    expires_at: datetime | None = None,
) -> tuple[ApiToken, str]:
    """Create a token; return it with its secret, which is never stored nor shown again."""
    action = Action.TOKEN_ISSUE_WRITE if scope == ApiToken.Scope.WRITE else Action.TOKEN_ISSUE_READ
    authorize(caller=caller, organization=organization, action=action)
    if expires_at is not None and expires_at <= timezone.now():
        raise ValidationError({"expires_at": "The expiry must be in the future."})
    prefix = secrets.token_hex(6)
    secret = f"{TOKEN_PREFIX}_{prefix}_{secrets.token_urlsafe(32)}"
    token = ApiToken(
        owner=caller.user,
        organization=organization,
        name=name,
        scope=scope,
        prefix=prefix,
        digest=_token_digest(secret),
        expires_at=expires_at,
    )
    _validated(token, exclude=["owner", "prefix", "digest"]).save()
    audit_record(
        caller=caller,
        organization=organization,
        action="token.issue",
        target=token,
        payload={"name": name, "scope": scope, "expires_at": expires_at and expires_at.isoformat()},
    )
    return token, secret


def _token_revoke(*, caller: Caller, token: ApiToken) -> ApiToken:
    token = ApiToken.objects.select_for_update().get(pk=token.pk)
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        audit_record(
            caller=caller, organization=token.organization, action="token.revoke", target=token
        )
    return token


@transaction.atomic
def token_revoke(*, caller: Caller, token: ApiToken) -> ApiToken:
    # Revoking is allowed even in a suspended organization: it only takes access away.
    own = token.owner_id == caller.user.pk
    action = Action.TOKEN_ISSUE_READ if own else Action.TOKEN_MANAGE_ALL
    role = caller_role(caller=caller, organization=token.organization)
    if not role_allows(role, action):
        raise PermissionDenied(f"Your role ({role}) does not allow revoking others' tokens.")
    if not caller.can_write:
        raise PermissionDenied("This API token is read-only.")
    return _token_revoke(caller=caller, token=token)


@transaction.atomic
def token_revoke_by_operator(*, caller: Caller, token: ApiToken) -> ApiToken:
    require_operator(caller)
    return _token_revoke(caller=caller, token=token)


# Last use is written at most once a minute per token, not on every request.
TOKEN_LAST_USED_RESOLUTION = timedelta(minutes=1)


def token_authenticate(*, secret: str) -> ApiToken:
    """The active token with this secret; PermissionDenied with the reason otherwise."""
    parts = secret.split("_", 2)
    if len(parts) != 3 or parts[0] != TOKEN_PREFIX:
        raise PermissionDenied("Malformed API token.")
    token = ApiToken.objects.select_related("owner", "organization").filter(prefix=parts[1]).first()
    if token is None or not secrets.compare_digest(token.digest, _token_digest(secret)):
        raise PermissionDenied("Invalid API token.")
    now = timezone.now()
    state = token.state(now)
    if state != "active":
        raise PermissionDenied(f"This API token is {state}.")
    if not token.owner.is_active:
        raise PermissionDenied("The token's owner is deactivated.")
    if token.last_used_at is None or now - token.last_used_at >= TOKEN_LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


@transaction.atomic
def user_create(*, email: str, password: str, verified: bool = True, **extra):
    """A user whose e-mail address is known to allauth (verified when an operator says so)."""
    user = get_user_model().objects.create_user(
        username=email.split("@")[0][:150] + "-" + secrets.token_hex(3),
        email=email,
        password=password,
        **extra,
    )
    EmailAddress.objects.create(user=user, email=email, primary=True, verified=verified)
    return user
