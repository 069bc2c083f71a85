"""The web console's tenancy pages: forms in, services called, messages out."""

from allauth.account.adapter import get_adapter
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from portal.console import REFUSED, attempt, filters_given, query_without_page

from . import selectors, services
from .api.filters import AuditEventFilter
from .forms import (
    InvitationForm,
    OrganizationCreateForm,
    ProjectCreateForm,
    RoleChangeForm,
    SsoForm,
    TokenIssueForm,
)
from .lookups import project_of
from .permissions import Action, caller_of, role_allows

ISSUED_SECRET_KEY = "tenants.issued_token_secret"
AUDIT_PAGE = 50


@login_required
def home(request):
    caller = caller_of(request)
    form = OrganizationCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        organization = attempt(
            request, form, lambda: services.organization_create(caller=caller, **form.cleaned_data)
        )
        if organization is not REFUSED:
            messages.success(request, f"Organization {organization.name} created.")
            return redirect("console:organization", org_slug=organization.slug)
    return render(
        request,
        "tenants/home.html",
        {"organizations": selectors.organization_list(caller=caller), "form": form},
    )


@login_required
def organization_detail(request, org_slug: str):
    caller = caller_of(request)
    organization = selectors.organization_get(caller=caller, slug=org_slug)
    role = organization.my_role
    project_form = ProjectCreateForm(request.POST if "create_project" in request.POST else None)
    invite_form = InvitationForm(request.POST if "invite" in request.POST else None)
    sso_form = SsoForm(
        request.POST if "set_sso" in request.POST else None,
        initial={
            "provider": organization.sso_provider,
            "domains": ", ".join(organization.sso_domains),
        },
    )
    if request.method == "POST":
        if sso_form.is_bound and sso_form.is_valid():
            changed = attempt(
                request,
                sso_form,
                lambda: services.organization_sso_set(
                    caller=caller, organization=organization, **sso_form.cleaned_data
                ),
            )
            if changed is not REFUSED:
                messages.success(request, "Single sign-on settings saved.")
                return redirect("console:organization", org_slug=org_slug)
        if project_form.is_bound and project_form.is_valid():
            project = attempt(
                request,
                project_form,
                lambda: services.project_create(
                    caller=caller, organization=organization, **project_form.cleaned_data
                ),
            )
            if project is not REFUSED:
                messages.success(request, f"Project {project.slug} created: {project.namespace}.")
                return redirect("console:organization", org_slug=org_slug)
        if invite_form.is_bound and invite_form.is_valid():
            invitation = attempt(
                request,
                invite_form,
                lambda: services.member_invite(
                    caller=caller, organization=organization, **invite_form.cleaned_data
                ),
            )
            if invitation is not REFUSED:
                messages.success(request, f"Invitation sent to {invitation.email}.")
                return redirect("console:organization", org_slug=org_slug)
    can_manage = role_allows(role, Action.MEMBER_INVITE)
    context = {
        "organization": organization,
        "role": role,
        "projects": selectors.project_list(caller=caller, organization=organization),
        "members": selectors.member_list(caller=caller, organization=organization),
        "invitations": (
            selectors.invitation_list(caller=caller, organization=organization).filter(
                accepted_at__isnull=True, revoked_at__isnull=True
            )
            if can_manage
            else []
        ),
        "can_manage": can_manage,
        "can_create_project": role_allows(role, Action.PROJECT_CREATE),
        "role_form": RoleChangeForm(),
        "project_form": project_form,
        "invite_form": invite_form,
        "sso_form": sso_form if role_allows(role, Action.SSO_MANAGE) else None,
    }
    return render(request, "tenants/organization.html", context)


@login_required
def project_detail(request, org_slug: str, project_slug: str):
    caller = caller_of(request)
    project = project_of(request, org_slug, project_slug)
    organization = project.organization
    if request.method == "POST" and "delete" in request.POST:
        deleted = attempt(
            request, None, lambda: services.project_delete(caller=caller, project=project)
        )
        if deleted is not REFUSED:
            messages.success(request, f"Project {project.slug} deleted.")
            return redirect("console:organization", org_slug=org_slug)
    return render(
        request,
        "tenants/project.html",
        {
            "organization": organization,
            "project": project,
            "can_delete": role_allows(organization.my_role, Action.PROJECT_DELETE),
        },
    )


@login_required
@require_POST
def member_role(request, org_slug: str, member_id):
    caller = caller_of(request)
    organization = selectors.organization_get(caller=caller, slug=org_slug)
    membership = selectors.member_get(
        caller=caller, organization=organization, membership_id=member_id
    )
    form = RoleChangeForm(request.POST)
    if form.is_valid():
        changed = attempt(
            request,
            None,
            lambda: services.member_role_change(
                caller=caller, membership=membership, role=form.cleaned_data["role"]
            ),
        )
        if changed is not REFUSED:
            messages.success(request, f"{membership.user.email} is now {changed.role}.")
    return redirect("console:organization", org_slug=org_slug)


@login_required
@require_POST
def member_remove(request, org_slug: str, member_id):
    caller = caller_of(request)
    organization = selectors.organization_get(caller=caller, slug=org_slug)
    membership = selectors.member_get(
        caller=caller, organization=organization, membership_id=member_id
    )
    leaving = membership.user_id == request.user.pk

    removed = attempt(
        request, None, lambda: services.member_remove(caller=caller, membership=membership)
    )
    if removed is not REFUSED:
        if leaving:
            messages.success(request, f"You left {organization.name}.")
            return redirect("console:home")
        messages.success(request, f"{membership.user.email} removed.")
    return redirect("console:organization", org_slug=org_slug)


@login_required
@require_POST
def invitation_revoke(request, org_slug: str, invitation_id):
    caller = caller_of(request)
    organization = selectors.organization_get(caller=caller, slug=org_slug)
    invitation = selectors.invitation_get(
        caller=caller, organization=organization, invitation_id=invitation_id
    )
    revoked = attempt(
        request, None, lambda: services.invitation_revoke(caller=caller, invitation=invitation)
    )
    if revoked is not REFUSED:
        messages.success(request, f"Invitation to {invitation.email} revoked.")
    return redirect("console:organization", org_slug=org_slug)


@login_required
def tokens(request, org_slug: str):
    caller = caller_of(request)
    organization = selectors.organization_get(caller=caller, slug=org_slug)
    form = TokenIssueForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        issued = attempt(
            request,
            form,
            lambda: services.token_issue(
                caller=caller, organization=organization, **form.cleaned_data
            ),
        )
        if issued is not REFUSED:
            # Shown on the next page only (post, redirect, get): a reload issues no second
            # token and shows the secret no more.
            request.session[ISSUED_SECRET_KEY] = issued[1]
            return redirect("console:tokens", org_slug=org_slug)
    return render(
        request,
        "tenants/tokens.html",
        {
            "organization": organization,
            "tokens": selectors.token_list(caller=caller, organization=organization),
            "form": form,
            "issued_secret": request.session.pop(ISSUED_SECRET_KEY, None),
        },
    )


@login_required
@require_POST
def token_revoke(request, org_slug: str, token_id):
    caller = caller_of(request)
    organization = selectors.organization_get(caller=caller, slug=org_slug)
    token = selectors.token_get(caller=caller, organization=organization, token_id=token_id)
    revoked = attempt(request, None, lambda: services.token_revoke(caller=caller, token=token))
    if revoked is not REFUSED:
        messages.success(request, f"Token {token.name} revoked.")
    return redirect("console:tokens", org_slug=org_slug)


@login_required
def audit(request, org_slug: str):
    caller = caller_of(request)
    organization = selectors.organization_get(caller=caller, slug=org_slug)
    # The API's filters, so a search reads the same in the console and in a script.
    filters = AuditEventFilter(
        filters_given(request.GET),
        queryset=selectors.audit_event_list(caller=caller, organization=organization),
    )
    valid = not filters.is_bound or filters.is_valid()
    events = filters.qs if valid else filters.queryset.none()
    page = Paginator(events, AUDIT_PAGE).get_page(request.GET.get("page"))
    return render(
        request,
        "tenants/audit.html",
        {
            "organization": organization,
            "filters": filters,
            "page": page,
            "query": query_without_page(request.GET),
        },
    )


def invitation(request, token: str):
    """The link in an invitation e-mail: sign up or sign in, then accept."""
    try:
        found = services.invitation_from_token(token)
    except ValidationError as error:
        return render(
            request, "tenants/invitation.html", {"error": " ".join(error.messages)}, status=404
        )
    if not request.user.is_authenticated:
        # The link reached this mailbox: a sign-up with that address needs no second check.
        get_adapter(request).stash_verified_email(request, found.email)
        return render(
            request,
            "tenants/invitation.html",
            {"invitation": found, "next": reverse("console:invitation", kwargs={"token": token})},
        )
    if request.method == "POST":
        membership = attempt(
            request, None, lambda: services.invitation_accept(user=request.user, token=token)
        )
        if membership is not REFUSED:
            messages.success(request, f"Welcome to {membership.organization.name}.")
            return redirect("console:organization", org_slug=membership.organization.slug)
    return render(request, "tenants/invitation.html", {"invitation": found})
