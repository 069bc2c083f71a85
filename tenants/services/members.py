"""Members, invitations and the users behind them."""

import secrets
from datetime import timedelta

from allauth.account.models import EmailAddress
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.core.exceptions import ValidationError
from django.db import transaction
from django.urls import reverse

from portal import clock
from portal.errors import Conflict, Forbidden
from portal.events import Event, publish
from portal.mail import mail_send

from ..models import ApiToken, Invitation, Membership, Organization, Role
from ..permissions import Action, Caller, authorize, require_operator
from .audit import audit_record
from .common import insert, validated

INVITATION_LIFETIME = timedelta(days=7)
INVITATION_SALT = "tenants.invitation"


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
    if not organization.sso_allows_email(email):
        domains = ", ".join(organization.sso_domains)
        raise ValidationError(
            {"email": f"{organization.slug} invites addresses of {domains} only."}
        )
    if Membership.objects.filter(organization=organization, user__email__iexact=email).exists():
        raise ValidationError({"email": f"{email} is already a member of {organization.slug}."})
    now = clock.wall()
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
    validated(invitation, exclude=["invited_by"])
    if Invitation.objects.filter(
        organization=organization,
        email__iexact=email,
        accepted_at__isnull=True,
        revoked_at__isnull=True,
    ).exists():
        raise ValidationError({"email": f"{email} already has an open invitation."})
    insert(invitation, field="email", message=f"{email} already has an open invitation.")
    audit_record(
        caller=caller,
        organization=organization,
        action="invitation.create",
        target=invitation,
        payload={"email": email, "role": role},
    )
    publish(Event.INVITATION_CREATED, invitation_id=str(invitation.pk))
    return invitation


def invitation_email_send(*, invitation_id: str) -> bool:
    """Mail the invitation link, at most once (`mail_send` keys it by the invitation); the
    invitation is not locked while the mail server answers. Whether it was mailed now."""
    invitation = (
        Invitation.objects.select_related("organization", "invited_by")
        .filter(pk=invitation_id, sent_at__isnull=True)
        .first()
    )
    if invitation is None or invitation.state() != "pending":
        return False
    mailed = mail_send(
        key=f"invitation:{invitation.pk}",
        recipients=[invitation.email],
        template="tenants/email/invitation.txt",
        context={
            "invitation": invitation,
            "organization": invitation.organization,
            "inviter": invitation.invited_by,
            "url": invitation_url(invitation),
        },
    )
    Invitation.objects.filter(pk=invitation.pk, sent_at__isnull=True).update(sent_at=clock.wall())
    return mailed > 0


@transaction.atomic
def invitation_revoke(*, caller: Caller, invitation: Invitation) -> Invitation:
    authorize(caller=caller, organization=invitation.organization, action=Action.MEMBER_INVITE)
    _require_role_grant(caller=caller, organization=invitation.organization, role=invitation.role)
    invitation = Invitation.objects.select_for_update().get(pk=invitation.pk)
    if invitation.state() != "pending":
        raise Conflict(f"The invitation is {invitation.state()}.", code="invitation_not_pending")
    invitation.revoked_at = clock.wall()
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
        raise Forbidden(
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
    invitation.accepted_at = clock.wall()
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


LAST_OWNER = "An organization keeps at least one owner: make someone else owner first."


@transaction.atomic
def member_role_change(*, caller: Caller, membership: Membership, role: str) -> Membership:
    organization = membership.organization
    authorize(caller=caller, organization=organization, action=Action.MEMBER_ROLE_CHANGE)
    return _role_set(caller=caller, membership=membership, role=role, as_member=True)


@transaction.atomic
def member_role_change_by_operator(
    *, caller: Caller, membership: Membership, role: str
) -> Membership:
    """An operator changes a member's role (in admin), under the rules members have: an
    organization keeps at least one owner, and the change is audited."""
    require_operator(caller)
    return _role_set(caller=caller, membership=membership, role=role, as_member=False)


def _role_set(*, caller: Caller, membership: Membership, role: str, as_member: bool) -> Membership:
    """Set the role under the owner rows' lock; ``as_member``: the caller acts as a member of
    the organization, who needs the owner role to grant or take it."""
    organization = membership.organization
    if role not in Role.values:
        raise ValidationError({"role": f"'{role}' is not a role: use one of {Role.values}."})
    owners = _lock_owners(organization)
    membership = (
        Membership.objects.select_for_update(of=("self",))
        .select_related("user", "organization")
        .get(pk=membership.pk)
    )
    if membership.role == role:
        return membership
    if as_member and Role.OWNER in (role, membership.role):
        authorize(caller=caller, organization=organization, action=Action.OWNER_MANAGE)
    if membership.role == Role.OWNER and len(owners) == 1:
        raise Conflict(LAST_OWNER, code="last_owner")
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
            raise Forbidden("This API token is read-only.")
    else:
        authorize(caller=caller, organization=organization, action=Action.MEMBER_REMOVE)
    _remove(caller=caller, membership=membership, leaving_self=leaving_self, as_member=True)


@transaction.atomic
def member_remove_by_operator(*, caller: Caller, membership: Membership) -> None:
    """An operator removes a member (in admin): never the last owner; their tokens end; the
    removal is audited."""
    require_operator(caller)
    _remove(caller=caller, membership=membership, leaving_self=False, as_member=False)


@transaction.atomic
def member_add_by_operator(
    *, caller: Caller, organization: Organization, user, role: str
) -> Membership:
    """An operator makes a user a member (in admin), audited as a member added."""
    require_operator(caller)
    if role not in Role.values:
        raise ValidationError({"role": f"'{role}' is not a role: use one of {Role.values}."})
    membership = Membership(organization=organization, user=user, role=role)
    insert(membership, field="user", message=f"{user} is already a member of {organization}.")
    audit_record(
        caller=caller,
        organization=organization,
        action="member.add",
        target=membership,
        payload={"email": user.email, "role": role},
    )
    return membership


def _remove(*, caller: Caller, membership: Membership, leaving_self: bool, as_member: bool) -> None:
    organization = membership.organization
    owners = _lock_owners(organization)
    membership = (
        Membership.objects.select_for_update(of=("self",))
        .select_related("user")
        .get(pk=membership.pk)
    )
    if membership.role == Role.OWNER:
        if as_member and not leaving_self:
            authorize(caller=caller, organization=organization, action=Action.OWNER_MANAGE)
        if len(owners) == 1:
            raise Conflict(LAST_OWNER, code="last_owner")
    # Tokens reach the organization through the membership: they end with it.
    now = clock.wall()
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
