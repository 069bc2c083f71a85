"""Who may do what: the one permission matrix of the portal, and the caller it is checked for.

Every service that reads or writes tenant data calls `authorize` (writes) or scopes its query with
`organization_ids_visible_to` (reads). A caller outside the organization gets NotFound, never
Forbidden, so that an answer never confirms that another tenant's object exists.
"""

from dataclasses import dataclass
from enum import StrEnum

from allauth.account.authentication import get_authentication_records
from django.db.models import Q, QuerySet

from portal.errors import Conflict, Forbidden, NotFound

from .models import ApiToken, Membership, Organization, Role


class Action(StrEnum):
    ORGANIZATION_VIEW = "organization.view"
    ORGANIZATION_UPDATE = "organization.update"
    ORGANIZATION_DELETE = "organization.delete"
    MEMBER_VIEW = "member.view"
    INVITATION_VIEW = "invitation.view"
    MEMBER_INVITE = "member.invite"
    MEMBER_ROLE_CHANGE = "member.role_change"
    MEMBER_REMOVE = "member.remove"
    # Granting, changing or removing the owner role.
    OWNER_MANAGE = "owner.manage"
    PROJECT_VIEW = "project.view"
    PROJECT_CREATE = "project.create"
    PROJECT_UPDATE = "project.update"
    PROJECT_DELETE = "project.delete"
    TOKEN_ISSUE_READ = "token.issue_read"
    TOKEN_ISSUE_WRITE = "token.issue_write"
    # Seeing and revoking the tokens of other members.
    TOKEN_MANAGE_ALL = "token.manage_all"
    AUDIT_VIEW = "audit.view"
    WORKLOAD_VIEW = "workload.view"
    WORKLOAD_SUBMIT = "workload.submit"
    # Cancelling the workloads of other members.
    WORKLOAD_CANCEL_ANY = "workload.cancel_any"
    RESERVATION_VIEW = "reservation.view"
    # Asking for reserved capacity, and cancelling a reservation.
    RESERVATION_MANAGE = "reservation.manage"
    QUOTA_REQUEST = "quota.request"
    ORDER_MANAGE = "order.manage"
    # Money, the one rule for seeing it: invoices and their exports, usage and its cost, credits,
    # budgets, order prices and totals, cancellation charges. Owners and admins only.
    INVOICE_VIEW = "invoice.view"
    BUDGET_MANAGE = "budget.manage"
    # Requiring single sign-on of the members, and its allowed e-mail domains.
    SSO_MANAGE = "sso.manage"
    # Webhook endpoints and their deliveries (seeing them too: their URLs, and deliveries
    # carry invoices). Owners and admins only.
    WEBHOOK_VIEW = "webhook.view"
    WEBHOOK_MANAGE = "webhook.manage"


_EVERYONE = frozenset(Role)
_WRITERS = frozenset({Role.OWNER, Role.ADMIN, Role.MEMBER})
_MANAGERS = frozenset({Role.OWNER, Role.ADMIN})
_OWNERS = frozenset({Role.OWNER})

PERMISSIONS: dict[Action, frozenset[Role]] = {
    Action.ORGANIZATION_VIEW: _EVERYONE,
    Action.ORGANIZATION_UPDATE: _MANAGERS,
    Action.ORGANIZATION_DELETE: _OWNERS,
    Action.MEMBER_VIEW: _EVERYONE,
    Action.INVITATION_VIEW: _MANAGERS,
    Action.MEMBER_INVITE: _MANAGERS,
    Action.MEMBER_ROLE_CHANGE: _MANAGERS,
    Action.MEMBER_REMOVE: _MANAGERS,
    Action.OWNER_MANAGE: _OWNERS,
    Action.PROJECT_VIEW: _EVERYONE,
    Action.PROJECT_CREATE: _MANAGERS,
    Action.PROJECT_UPDATE: _MANAGERS,
    Action.PROJECT_DELETE: _MANAGERS,
    Action.TOKEN_ISSUE_READ: _EVERYONE,
    Action.TOKEN_ISSUE_WRITE: _WRITERS,
    Action.TOKEN_MANAGE_ALL: _MANAGERS,
    Action.AUDIT_VIEW: _MANAGERS,
    Action.WORKLOAD_VIEW: _EVERYONE,
    Action.WORKLOAD_SUBMIT: _WRITERS,
    Action.WORKLOAD_CANCEL_ANY: _MANAGERS,
    Action.RESERVATION_VIEW: _EVERYONE,
    Action.RESERVATION_MANAGE: _MANAGERS,
    Action.QUOTA_REQUEST: _MANAGERS,
    Action.ORDER_MANAGE: _MANAGERS,
    Action.INVOICE_VIEW: _MANAGERS,
    Action.BUDGET_MANAGE: _MANAGERS,
    Action.SSO_MANAGE: _OWNERS,
    Action.WEBHOOK_VIEW: _MANAGERS,
    Action.WEBHOOK_MANAGE: _MANAGERS,
}

# Actions that change nothing: allowed to read-only tokens and in suspended organizations.
READ_ACTIONS = frozenset(
    {
        Action.ORGANIZATION_VIEW,
        Action.MEMBER_VIEW,
        Action.INVITATION_VIEW,
        Action.PROJECT_VIEW,
        Action.AUDIT_VIEW,
        Action.WORKLOAD_VIEW,
        Action.RESERVATION_VIEW,
        Action.INVOICE_VIEW,
        Action.WEBHOOK_VIEW,
    }
)


def role_allows(role: str, action: Action) -> bool:
    return role in PERMISSIONS[action]


def sees_money(role: str) -> bool:
    """The money-visibility rule: whether a member of this role may see what the organization
    pays (an order's price and total, a cancellation charge, an invoice, usage's cost)."""
    return role_allows(role, Action.INVOICE_VIEW)


@dataclass(frozen=True)
class Caller:
    """Who is acting: a signed-in user, possibly through an API token.

    A token narrows the user's rights: it reaches only its own organization, and a read token
    changes nothing; an operator token (of a staff user) reaches the operator API and no
    organization.
    """

    user: object
    token: ApiToken | None = None
    # The single sign-on providers (provider_id) this console session signed in through; None
    # for a caller that is not a console session (an API token, admin, a task), which an
    # organization's SSO requirement does not concern.
    signed_in_with: frozenset[str] | None = None

    @property
    def can_write(self) -> bool:
        return self.token is None or self.token.can_write

    @property
    def is_operator(self) -> bool:
        """A staff user, signed in or through an operator token (a tenant token of a staff
        user narrows it to that organization's tenant API)."""
        staff = bool(getattr(self.user, "is_staff", False))
        return staff and (self.token is None or self.token.is_operator)

    def meets_sso_of(self, organization: Organization) -> bool:
        """Whether the organization's single sign-on requirement lets this caller in."""
        return (
            not organization.sso_provider
            or self.signed_in_with is None
            or organization.sso_provider in self.signed_in_with
        )


def caller_of(request) -> Caller:
    """The caller of a console or API request: an API token narrows its user; a session carries
    the single sign-on providers it signed in through (allauth's record of the session)."""
    token = getattr(request, "auth", None)
    if isinstance(token, ApiToken):
        return Caller(user=request.user, token=token)
    # (A request built without the session middleware, as in some tests, records nothing.)
    records = (
        get_authentication_records(request, request.user) if hasattr(request, "session") else []
    )
    return Caller(
        user=request.user,
        signed_in_with=frozenset(
            record["provider"] for record in records if record.get("method") == "socialaccount"
        ),
    )


def organization_ids_visible_to(caller: Caller) -> QuerySet:
    """The organizations whose data the caller may read, as a subquery of ids."""
    memberships = Membership.objects.filter(user_id=caller.user.pk)
    if caller.token is not None:
        memberships = memberships.filter(organization_id=caller.token.organization_id)
    if caller.signed_in_with is not None:
        memberships = memberships.filter(
            Q(organization__sso_provider="")
            | Q(organization__sso_provider__in=caller.signed_in_with)
        )
    return memberships.values("organization_id")


def _role_read_with(organization: Organization, *, caller: Caller) -> str | None:
    """The caller's role as read with the organization by this request's lookup for this same
    caller (``my_role``; tenants.selectors stamps ``role_read_for``): no second query for it."""
    if getattr(organization, "role_read_for", None) == caller:
        return getattr(organization, "my_role", None)
    return None


def caller_role(*, caller: Caller, organization: Organization) -> str:
    """The caller's role in the organization; NotFound when the caller cannot see it."""
    if caller.token is not None and caller.token.organization_id != organization.pk:
        raise NotFound("No such organization.")
    role = _role_read_with(organization, caller=caller) or (
        Membership.objects.filter(organization=organization, user_id=caller.user.pk)
        .values_list("role", flat=True)
        .first()
    )
    if role is None:
        raise NotFound("No such organization.")
    if not caller.meets_sso_of(organization):
        raise SsoRequired.of(organization)
    return role


class OrganizationSuspended(Conflict):
    code = "organization_suspended"


class SsoRequired(Forbidden):
    """A member signed in otherwise than through the single sign-on its organization
    requires."""

    code = "sso_required"

    @classmethod
    def of(cls, organization: Organization) -> "SsoRequired":
        return cls(
            f"Organization {organization.slug} requires single sign-on: sign out, then sign in"
            f" through its identity provider ({organization.sso_provider}).",
            details={"sso_provider": organization.sso_provider},
        )


def authorize(*, caller: Caller, organization: Organization, action: Action) -> str:
    """Raise unless the caller may do `action` in `organization`; return the caller's role."""
    role = caller_role(caller=caller, organization=organization)
    if not role_allows(role, action):
        raise Forbidden(f"Your role ({role}) does not allow {action}.")
    if action not in READ_ACTIONS:
        if not caller.can_write:
            raise Forbidden("This API token is read-only.")
        if not organization.is_active:
            raise OrganizationSuspended(
                f"Organization {organization.slug} is suspended; nothing can be changed."
            )
    return role


def require_operator(caller: Caller) -> None:
    if not caller.is_operator:
        raise Forbidden("Only operators (staff) may do this.")
