"""Operators' screen of fair share: each organization's decayed usage, weight and share as the
cycle weighs them (``selectors.fair_share_standings``), read-only; and its weight, edited through
the service the operator API calls (audited ``organization.update``)."""

from django.contrib import admin

from portal import clock
from tenants.admin import RefusalsAsMessages
from tenants.models import Organization
from tenants.permissions import Caller
from tenants.services import organization_update_by_operator

from . import selectors
from .selectors.fairness import Standing

NOT_COMPETING = "—"  # it neither uses GPUs, used them lately, nor waits for them
# (column, header, how a standing shows it)
STANDING_COLUMNS = [
    ("decayed_gpu_hours", "Decayed GPU-hours", lambda s: f"{s.decayed_gpu_hours:,.1f}"),
    ("current_share", "Holds now", lambda s: f"{s.current_share:.1%}"),
    ("usage_share", "Of all decayed usage", lambda s: f"{s.usage_share:.1%}"),
    ("fair_share", "Fair share", lambda s: f"{s.fair_share:.1%}"),
    ("times_its_share", "Used / fair share", lambda s: f"{s.times_its_share:.2f}x"),
]
SENTENCE = ("sentence", "Why its work is ordered where it is", lambda s: s.sentence)


def _column(standings: dict[str, Standing], name: str, header: str, shown):
    """A read-only column of the standings computed for one page."""

    def column(organization) -> str:
        standing = standings.get(organization.slug)
        return NOT_COMPETING if standing is None else shown(standing)

    column.__name__, column.short_description = name, header
    return column


class FairShareStandingAdmin(RefusalsAsMessages, admin.ModelAdmin):
    search_fields = ["slug", "name"]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("decayed_usage")

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def _standing_columns(self, request, organization=None) -> list:
        """The standing's columns for this page, computed once per request: every competing
        organization on the list; on an organization's page, its own even when it does not
        compete (as the operator API answers it)."""
        if not hasattr(request, "fair_share_columns"):
            standings = selectors.fair_share_standings(
                caller=Caller(user=request.user),
                now=clock.now(),
                including=organization.slug if organization else None,
            )
            by_slug = {s.organization: s for s in standings}
            columns = [*STANDING_COLUMNS, *([SENTENCE] if organization else [])]
            request.fair_share_columns = [_column(by_slug, *column) for column in columns]
        return request.fair_share_columns

    def get_list_display(self, request):
        return [
            "slug",
            "name",
            "fair_share_weight",
            *self._standing_columns(request),
            "stored_usage",
        ]

    def get_readonly_fields(self, request, obj=None):
        return ["slug", "name", *self._standing_columns(request, obj), "stored_usage"]

    def get_fields(self, request, obj=None):
        # The same column objects as read-only: the form leaves out exactly those.
        slug, name, *standing = self.get_readonly_fields(request, obj)
        return [slug, name, "fair_share_weight", *standing]

    @admin.display(description="Ended work, as the last cycle counted it")
    def stored_usage(self, organization) -> str:
        usage = getattr(organization, "decayed_usage", None)
        if usage is None:
            return "none counted"
        return f"{usage.gpu_seconds / 3600:,.1f} GPU-hours as of {usage.as_of:%Y-%m-%d %H:%M} UTC"

    def save_model(self, request, obj, form, change) -> None:
        if "fair_share_weight" in form.changed_data:
            organization_update_by_operator(
                caller=Caller(user=request.user),
                organization=Organization.objects.get(pk=obj.pk),
                fair_share_weight=form.cleaned_data["fair_share_weight"],
            )
        obj.refresh_from_db()

    def save_related(self, request, form, formsets, change) -> None:
        return None  # no relations are edited here
