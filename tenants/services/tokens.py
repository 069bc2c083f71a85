"""API tokens: issued with a secret shown once, stored as a digest, revoked, authenticated."""

import hashlib
import secrets
from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.db import transaction

from portal import clock
from portal.errors import Forbidden

from ..models import ApiToken, Organization
from ..permissions import Action, Caller, authorize, caller_role, require_operator, role_allows
from .audit import audit_record
from .common import validated

TOKEN_PREFIX = "gcp"


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
    if scope == ApiToken.Scope.OPERATOR:
        raise ValidationError(
            {"scope": "An operator token is issued by staff, to no organization."}
        )
    return _issue(
        caller=caller, organization=organization, name=name, scope=scope, expires_at=expires_at
    )


@transaction.atomic
def operator_token_issue(
    *, caller: Caller, name: str, expires_at: datetime | None = None
) -> tuple[ApiToken, str]:
    """A staff user, signed in (admin, or the ``operator_token`` command), issues themselves a
    token of the operator API; return it with its secret, shown once. Only a staff user's
    session issues one: not a token, not even an operator token."""
    if caller.token is not None or not caller.is_operator:
        raise Forbidden("Only staff, signed in, issue operator tokens.")
    return _issue(
        caller=caller,
        organization=None,
        name=name,
        scope=ApiToken.Scope.OPERATOR,
        expires_at=expires_at,
    )


def _issue(
    *,
    caller: Caller,
    organization: Organization | None,
    name: str,
    scope: str,
    expires_at: datetime | None,
) -> tuple[ApiToken, str]:
    if expires_at is not None and expires_at <= clock.wall():
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
    validated(token, exclude=["owner", "prefix", "digest"]).save()
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
        token.revoked_at = clock.wall()
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
        raise Forbidden(f"Your role ({role}) does not allow revoking others' tokens.")
    if not caller.can_write:
        raise Forbidden("This API token is read-only.")
    return _token_revoke(caller=caller, token=token)


@transaction.atomic
def token_revoke_by_operator(*, caller: Caller, token: ApiToken) -> ApiToken:
    require_operator(caller)
    return _token_revoke(caller=caller, token=token)


# Last use is written at most once a minute per token, not on every request.
TOKEN_LAST_USED_RESOLUTION = timedelta(minutes=1)


def token_authenticate(*, secret: str) -> ApiToken:
    """The active token with this secret; Forbidden with the reason otherwise."""
    parts = secret.split("_", 2)
    if len(parts) != 3 or parts[0] != TOKEN_PREFIX:
        raise Forbidden("Malformed API token.")
    token = ApiToken.objects.select_related("owner", "organization").filter(prefix=parts[1]).first()
    if token is None or not secrets.compare_digest(token.digest, _token_digest(secret)):
        raise Forbidden("Invalid API token.")
    now = clock.wall()
    state = token.state(now)
    if state != "active":
        raise Forbidden(f"This API token is {state}.")
    if not token.owner.is_active:
        raise Forbidden("The token's owner is deactivated.")
    if token.last_used_at is None or now - token.last_used_at >= TOKEN_LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token
