"""Reads of tenancy data, always through the caller's memberships.

An object of an organization the caller does not belong to is indistinguishable from one that
does not exist: the getters raise NotFound for both.
"""

from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce

from portal.errors import NotFound

from .models import ApiToken, AuditEvent, Invitation, Membership, Organization, Project, Role
from .permissions import (
    Action,
    Caller,
    SsoRequired,
    authorize,
    caller_role,
    organization_ids_visible_to,
    require_operator,
    role_allows,
)


def _count_of(model, **filters) -> Subquery:
    """A correlated COUNT(*) subquery: no join that multiplies rows."""
    rows = model.objects.filter(**filters).order_by().values("organization_id")
    return Subquery(rows.annotate(total=Count("pk")).values("total")[:1])


def _role_in(organization, *, caller: Caller) -> Subquery:
    """The caller's role in ``organization`` (an outer reference), as a subquery."""
    role = Membership.objects.filter(organization=organization, user_id=caller.user.pk)
    return Subquery(role.values("role")[:1])


def organization_list(*, caller: Caller) -> QuerySet[Organization]:
    return (
        Organization.objects.filter(pk__in=organization_ids_visible_to(caller))
        .annotate(
            my_role=_role_in(OuterRef("pk"), caller=caller),
            project_count=Coalesce(
                _count_of(Project, organization=OuterRef("pk"), deleted_at__isnull=True), 0
            ),
            member_count=Coalesce(_count_of(Membership, organization=OuterRef("pk")), 0),
        )
        .order_by("slug")
    )


def organization_get(*, caller: Caller, slug: str) -> Organization:
    organization = organization_list(caller=caller).filter(slug=slug).first()
    if organization is None:
        # A member whose session lacks the single sign-on the organization requires is told
        # so; anyone else cannot tell it from one that does not exist.
        gated = Organization.objects.filter(slug=slug, memberships__user_id=caller.user.pk)
        gated = gated.exclude(sso_provider="").first()
        if gated is not None and not caller.meets_sso_of(gated):
            raise SsoRequired.of(gated)
        raise NotFound("No such organization.")
    organization.role_read_for = caller
    return organization


def member_list(*, caller: Caller, organization: Organization) -> QuerySet[Membership]:
    authorize(caller=caller, organization=organization, action=Action.MEMBER_VIEW)
    return (
        Membership.objects.filter(organization=organization)
        .select_related("user", "organization")
        .order_by("user__email")
    )


def member_get(*, caller: Caller, organization: Organization, membership_id) -> Membership:
    membership = (
        member_list(caller=caller, organization=organization).filter(pk=membership_id).first()
    )
    if membership is None:
        raise NotFound("No such member.")
    return membership


def invitation_list(*, caller: Caller, organization: Organization) -> QuerySet[Invitation]:
    authorize(caller=caller, organization=organization, action=Action.INVITATION_VIEW)
    return Invitation.objects.filter(organization=organization).select_related(
        "organization", "invited_by", "accepted_by"
    )


def invitation_get(*, caller: Caller, organization: Organization, invitation_id) -> Invitation:
    invitation = (
        invitation_list(caller=caller, organization=organization).filter(pk=invitation_id).first()
    )
    if invitation is None:
        raise NotFound("No such invitation.")
    return invitation


def project_list(*, caller: Caller, organization: Organization | None = None) -> QuerySet[Project]:
    projects = Project.objects.filter(
        organization__in=organization_ids_visible_to(caller), deleted_at__isnull=True
    )
    if organization is not None:
        projects = projects.filter(organization=organization)
    return projects.select_related("organization", "created_by").order_by(
        "organization__slug", "slug"
    )


def project_get(*, caller: Caller, organization: Organization, slug: str) -> Project:
    project = project_list(caller=caller, organization=organization).filter(slug=slug).first()
    if project is None:
        raise NotFound("No such project.")
    return project


def project_named(
    *, organization: Organization, slug: str | None, errors: dict[str, list[str]]
) -> Project | None:
    """The organization's live project that a request's ``project`` field names (None when
    none is named); one it does not have adds a field error to ``errors``. The caller already
    reached ``organization``."""
    if not slug:
        return None
    project = Project.objects.filter(
        organization=organization, slug=slug, deleted_at__isnull=True
    ).first()
    if project is None:
        errors["project"] = [f"{organization.slug} has no project {slug!r}."]
    return project


def organization_for_operator(*, caller: Caller, slug: str) -> Organization:
    """Operators: the organization an operator API path names (404 if none)."""
    require_operator(caller)
    organization = Organization.objects.filter(slug=slug).first()
    if organization is None:
        raise NotFound(f"No organization {slug!r}.")
    return organization


def organization_named(
    *, caller: Caller, slug: str, errors: dict[str, list[str]]
) -> Organization | None:
    """Operators: the organization a request's ``organization`` field names; one that does not
    exist adds a field error to ``errors`` (and answers None)."""
    require_operator(caller)
    organization = Organization.objects.filter(slug=slug).first()
    if organization is None:
        errors["organization"] = [f"No organization {slug!r}."]
    return organization


def token_list(*, caller: Caller, organization: Organization) -> QuerySet[ApiToken]:
    """The caller's own tokens; owners and admins see every member's."""
    role = caller_role(caller=caller, organization=organization)
    tokens = ApiToken.objects.filter(organization=organization).select_related(
        "owner", "organization"
    )
    if not role_allows(role, Action.TOKEN_MANAGE_ALL):
        tokens = tokens.filter(owner_id=caller.user.pk)
    return tokens.order_by("-created_at")


def token_get(*, caller: Caller, organization: Organization, token_id) -> ApiToken:
    token = token_list(caller=caller, organization=organization).filter(pk=token_id).first()
    if token is None:
        raise NotFound("No such token.")
    return token


def audit_event_list(*, caller: Caller, organization: Organization) -> QuerySet[AuditEvent]:
    authorize(caller=caller, organization=organization, action=Action.AUDIT_VIEW)
    return AuditEvent.objects.filter(organization=organization).select_related("actor", "via_token")


def membership_list_of_caller(*, caller: Caller) -> QuerySet[Membership]:
    return (
        Membership.objects.filter(
            user_id=caller.user.pk, organization__in=organization_ids_visible_to(caller)
        )
        .select_related("user", "organization")
        .order_by("organization__slug")
    )


def project_get_by_slugs(*, caller: Caller, org_slug: str, project_slug: str) -> Project:
    """A project reached by its URL, with its organization, in one query (every workload
    request starts here); its organization carries the caller's role (``my_role``) as
    `organization_get`'s does. NotFound names the organization or the project, as the two
    getters above do."""
    project = (
        project_list(caller=caller)
        .filter(organization__slug=org_slug, slug=project_slug)
        .annotate(my_role=_role_in(OuterRef("organization"), caller=caller))
        .first()
    )
    if project is None:
        organization_get(caller=caller, slug=org_slug)
        raise NotFound("No such project.")
    project.organization.my_role = project.my_role
    project.organization.role_read_for = caller
    return project


def manager_emails(*, organization: Organization) -> list[str]:
    """The e-mail addresses of the organization's active owners and admins, for what they
    must hear of (a budget crossed)."""
    return list(
        Membership.objects.filter(
            organization=organization,
            role__in=[Role.OWNER, Role.ADMIN],
            user__is_active=True,
        )
        .exclude(user__email="")
        .order_by("user__email")
        .values_list("user__email", flat=True)
    )
