"""Operators' screens: every organization's endpoints (the secret never shown) and deliveries
with their attempts, read-only; redelivery is the organization's, through the console or API."""

from django.contrib import admin

from portal.admin import ReadOnlyAdmin

from .models import Attempt, Delivery, Endpoint


@admin.register(Endpoint)
class EndpointAdmin(ReadOnlyAdmin):
    list_display = ["url", "organization", "is_active", "created_at"]
    list_filter = ["is_active"]
    list_select_related = ["organization"]
    search_fields = ["url", "organization__slug"]
    exclude = ["secret"]
    readonly_fields = ["secret_hint"]


class AttemptInline(admin.TabularInline):
    model = Attempt
    extra = 0
    can_delete = False
    fields = ["number", "at", "manual", "status_code", "error", "response_body", "duration_ms"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Delivery)
class DeliveryAdmin(ReadOnlyAdmin):
    list_display = ["id", "event_type", "endpoint", "state", "attempts", "last_status_code"]
    list_filter = ["state", "event_type"]
    list_select_related = ["endpoint"]
    search_fields = ["id", "endpoint__url", "endpoint__organization__slug"]
    inlines = [AttemptInline]
