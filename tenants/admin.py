"""Operator screens. Admin actions call services, so every change is audited like any other."""

from django.contrib import admin, messages

from . import services
from .models import ApiToken, AuditEvent, Invitation, Membership, Organization, Project
from .permissions import Caller


class MembershipInline(admin.TabularInline):
    model = Membership
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
class OrganizationAdmin(admin.ModelAdmin):
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
    readonly_fields = ["id", "slug", "status", "status_reason", "created_at", "updated_at"]
    fields = [
        "id",
        "slug",
        "name",
        "billing_email",
        "time_zone",
        "fair_share_weight",
        "status",
        "status_reason",
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
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "organization", "role", "created_at"]
    list_filter = ["role"]
    search_fields = ["user__email", "organization__slug"]
    list_select_related = ["user", "organization"]
    autocomplete_fields = ["user", "organization"]


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
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
    readonly_fields = ["id", "organization", "slug", "namespace", "created_by", "created_at"]

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
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

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
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

    @admin.display(description="State")
    def state_label(self, token) -> str:
        return token.state()

    def has_add_permission(self, request) -> bool:
        return False

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request, queryset):
        caller = Caller(user=request.user)
        for token in queryset.filter(revoked_at__isnull=True):
            services.token_revoke_by_operator(caller=caller, token=token)
        self.message_user(request, "Tokens revoked.", messages.SUCCESS)


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["at", "organization", "actor_email", "action", "target_label"]
    list_filter = ["action", "target_type", "at"]
    search_fields = ["actor_email", "action", "target_label", "organization__slug"]
    list_select_related = ["organization"]
    date_hierarchy = "at"

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
