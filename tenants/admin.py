"""Operator screens. Admin saves and actions call services, so every change is audited like
any other and keeps the rules the API keeps (an organization keeps an owner)."""

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.core.exceptions import ValidationError
from django.http import HttpResponseRedirect

from portal.admin import ReadOnlyAdmin
from portal.errors import DomainError

from . import services
from .models import ApiToken, AuditEvent, Invitation, Membership, Organization, Project, Role
from .permissions import Caller


class RefusalsAsMessages:
    """A save the service refuses after the form was valid (a concurrent change made it
    break a rule) is rolled back and said as a message on the same page, not a 500."""

    def changeform_view(self, request, *args, **kwargs):
        try:
            return super().changeform_view(request, *args, **kwargs)
        except DomainError as refused:
            self.message_user(request, refused.message, messages.ERROR)
        except ValidationError as refused:
            self.message_user(request, " ".join(refused.messages), messages.ERROR)
        return HttpResponseRedirect(request.get_full_path())


class MembershipFormSet(forms.BaseInlineFormSet):
    """The members as the operator leaves them keep at least one owner."""

    def clean(self):
        super().clean()
        if any(self.errors):
            return
        for form in self.initial_forms:
            if "user" in form.changed_data:
                raise ValidationError(
                    "A membership's user does not change: remove it and add the other user.",
                    code="user_changed",
                )
        had = [form.initial.get("role") for form in self.initial_forms]
        kept = [
            form.cleaned_data.get("role")
            for form in self.forms
            if form.cleaned_data and not form.cleaned_data.get("DELETE")
        ]
        if Role.OWNER in had and Role.OWNER not in kept:
            raise ValidationError(services.LAST_OWNER, code="last_owner")


class MembershipInline(admin.TabularInline):
    model = Membership
    formset = MembershipFormSet
    extra = 0
    autocomplete_fields = ["user"]
    fields = ["user", "role", "created_at"]
    readonly_fields = ["created_at"]


class ProjectInline(admin.TabularInline):
    model = Project
    extra = 0
    fields = ["slug", "name", "namespace", "created_at"]
    readonly_fields = fields
    show_change_link = True
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Organization)
class OrganizationAdmin(RefusalsAsMessages, admin.ModelAdmin):
    list_display = [
        "slug",
        "name",
        "status",
        "fair_share_weight",
        "billing_email",
        "member_total",
        "created_at",
    ]
    list_filter = ["status", "created_at"]
    search_fields = ["slug", "name", "billing_email"]
    # Single sign-on is its owners' to require (the console, the API).
    readonly_fields = [
        "id",
        "slug",
        "status",
        "status_reason",
        "sso_provider",
        "sso_domains",
        "created_at",
        "updated_at",
    ]
    fields = [
        "id",
        "slug",
        "name",
        "billing_email",
        "time_zone",
        "fair_share_weight",
        "status",
        "status_reason",
        "sso_provider",
        "sso_domains",
        "created_at",
        "updated_at",
    ]
    inlines = [MembershipInline, ProjectInline]
    actions = ["suspend", "reactivate"]

    def get_queryset(self, request):
        from django.db.models import Count

        return super().get_queryset(request).annotate(member_total=Count("memberships"))

    @admin.display(description="Members", ordering="member_total")
    def member_total(self, organization) -> int:
        return organization.member_total

    def has_add_permission(self, request) -> bool:
        # Organizations are created by their owners, through the console or the API.
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        # Deleted by their owners (once their projects are gone), through the service.
        return False

    def save_model(self, request, obj, form, change) -> None:
        current = Organization.objects.get(pk=obj.pk)
        services.organization_update_by_operator(
            caller=Caller(user=request.user),
            organization=current,
            **{field: form.cleaned_data[field] for field in form.changed_data},
        )
        obj.refresh_from_db()

    def save_formset(self, request, form, formset, change) -> None:
        if formset.model is not Membership:
            return super().save_formset(request, form, formset, change)
        caller = Caller(user=request.user)
        # What admin's history records of the save (as BaseModelFormSet.save would set).
        formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
        # Promotions first, then demotions and removals: an owner handed over in one save
        # never leaves the organization without one in between.
        changed = sorted(
            (
                f
                for f in formset.initial_forms
                if f.has_changed() and f not in formset.deleted_forms
            ),
            key=lambda f: f.cleaned_data["role"] != Role.OWNER,
        )
        for membership_form in changed:
            membership = services.member_role_change_by_operator(
                caller=caller,
                membership=membership_form.instance,
                role=membership_form.cleaned_data["role"],
            )
            formset.changed_objects.append((membership, membership_form.changed_data))
        for membership_form in formset.extra_forms:
            if membership_form.has_changed() and not membership_form.cleaned_data.get("DELETE"):
                formset.new_objects.append(
                    services.member_add_by_operator(
                        caller=caller,
                        organization=form.instance,
                        user=membership_form.cleaned_data["user"],
                        role=membership_form.cleaned_data["role"],
                    )
                )
        for membership_form in formset.deleted_forms:
            if membership_form.instance.pk:
                services.member_remove_by_operator(
                    caller=caller, membership=membership_form.instance
                )
                formset.deleted_objects.append(membership_form.instance)

    @admin.action(description="Suspend: nothing can be created or changed")
    def suspend(self, request, queryset):
        caller = Caller(user=request.user)
        for organization in queryset:
            services.organization_suspend(
                caller=caller, organization=organization, reason="Suspended by an operator."
            )
        self.message_user(
            request, f"Suspended {queryset.count()} organization(s).", messages.SUCCESS
        )

    @admin.action(description="Reactivate")
    def reactivate(self, request, queryset):
        caller = Caller(user=request.user)
        for organization in queryset:
            services.organization_reactivate(caller=caller, organization=organization)
        self.message_user(
            request, f"Reactivated {queryset.count()} organization(s).", messages.SUCCESS
        )


@admin.register(Membership)
class MembershipAdmin(ReadOnlyAdmin):
    """Who belongs where; roles change on the organization's page (audited, an owner kept)."""

    list_display = ["user_email", "organization_name", "role", "created_at"]
    list_filter = ["role"]
    search_fields = ["user__email", "organization__slug", "organization__name"]
    list_select_related = ["user", "organization"]

    @admin.display(description="User", ordering="user__email")
    def user_email(self, membership) -> str:
        return membership.user.email

    @admin.display(description="Organization", ordering="organization__name")
    def organization_name(self, membership) -> str:
        return membership.organization.name


@admin.register(Project)
class ProjectAdmin(ReadOnlyAdmin):
    """Projects are their organizations': created, renamed and deleted by their members (the
    namespace follows)."""

    list_display = [
        "slug",
        "organization",
        "name",
        "namespace",
        "created_by",
        "created_at",
        "deleted_at",
    ]
    list_filter = ["created_at"]
    search_fields = ["slug", "name", "namespace", "organization__slug"]
    list_select_related = ["organization", "created_by"]


@admin.register(Invitation)
class InvitationAdmin(ReadOnlyAdmin):
    list_display = ["email", "organization", "role", "state_label", "created_at", "expires_at"]
    list_filter = ["role", "created_at"]
    search_fields = ["email", "organization__slug"]
    list_select_related = ["organization"]
    readonly_fields = [
        "organization",
        "email",
        "role",
        "invited_by",
        "created_at",
        "sent_at",
        "accepted_at",
        "accepted_by",
        "revoked_at",
    ]

    @admin.display(description="State")
    def state_label(self, invitation) -> str:
        return invitation.state()


@admin.register(ApiToken)
class ApiTokenAdmin(RefusalsAsMessages, ReadOnlyAdmin):
    list_display = [
        "name",
        "prefix",
        "owner",
        "organization",
        "scope",
        "state_label",
        "last_used_at",
        "expires_at",
    ]
    list_filter = ["scope", "created_at"]
    search_fields = ["name", "prefix", "owner__email", "organization__slug"]
    list_select_related = ["owner", "organization"]
    exclude = ["digest"]
    readonly_fields = [
        "owner",
        "organization",
        "name",
        "scope",
        "prefix",
        "created_at",
        "expires_at",
        "last_used_at",
        "revoked_at",
    ]
    actions = ["revoke"]

    # Adding one issues the signed-in staff user an operator token (the operator API); tenant
    # tokens are issued by their owners, in the console or the API.
    def has_add_permission(self, request, obj=None) -> bool:
        return request.user.is_staff

    def get_fields(self, request, obj=None):
        return ["name", "expires_at"] if obj is None else super().get_fields(request, obj)

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else self.readonly_fields

    def save_model(self, request, obj, form, change) -> None:
        token, secret = services.operator_token_issue(
            caller=Caller(user=request.user), name=obj.name, expires_at=obj.expires_at
        )
        obj.pk, obj.prefix = token.pk, token.prefix
        self.message_user(
            request,
            f"Operator token issued. Copy its secret now, it is not shown again: {secret}",
            messages.WARNING,
        )

    @admin.display(description="State")
    def state_label(self, token) -> str:
        return token.state()

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request, queryset):
        caller = Caller(user=request.user)
        for token in queryset.filter(revoked_at__isnull=True):
            services.token_revoke_by_operator(caller=caller, token=token)
        self.message_user(request, "Tokens revoked.", messages.SUCCESS)


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ["at", "organization", "actor_email", "action", "target_label"]
    list_filter = ["action", "target_type", "at"]
    search_fields = ["actor_email", "action", "target_label", "organization__slug"]
    list_select_related = ["organization"]
    date_hierarchy = "at"


# Users are their e-mail addresses: admin lists, finds and orders them by it (the username is
# internal, made unique from the address at sign-up).
User = get_user_model()
admin.site.unregister(User)


@admin.register(User)
class PortalUserAdmin(UserAdmin):
    list_display = ["email", "is_staff", "is_active", "last_login", "date_joined"]
    search_fields = ["email", "first_name", "last_name"]
    ordering = ["email"]
