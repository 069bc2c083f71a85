"""What every app's operator screens share: read-only pages changed only through actions,
waiting rows first, actions applied to each selected row through a service (asking first for
a decision's details on a page of its own), and the approval workflow's two actions; and the
kernel's own screen: what was mailed to whom.

The kernel knows no app: an action is given ``act(request, row)`` (or ``decide(request, row,
details)``) and the app builds its caller from the request."""

from collections.abc import Callable

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import Case, QuerySet, Value, When
from django.shortcuts import render

from .models import SentMail


class RejectionForm(forms.Form):
    reason = forms.CharField(max_length=500, widget=forms.Textarea(attrs={"rows": 3}))


class ReadOnlyAdmin(admin.ModelAdmin):
    """Read-only pages (no inputs, no Save button): changes only through actions."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


def requested_first(queryset: QuerySet, requested: str, *order) -> QuerySet:
    """Requests waiting for an operator before the rest."""
    waiting_first = Case(When(state=requested, then=Value(0)), default=Value(1))
    return queryset.order_by(waiting_first, *order)


def act_on_each(model_admin, request, selected, act: Callable, *, done: str) -> None:
    """Apply ``act(request, row)`` to each selected row (through its service), then say how
    many (``done``: "Approved", "Issued")."""
    for row in selected:
        act(request, row)
    model_admin.message_user(request, f"{done} {len(selected)}.", messages.SUCCESS)


def decide_with_form(model_admin, request, selected, *, action: str, form_class, decide: Callable):
    """An admin action that first asks for the decision's details on a page of its own (a
    reason, an amount), then applies ``decide(request, row, cleaned_data)`` to each one."""
    form = form_class(request.POST if "apply" in request.POST else None)
    if form.is_valid():
        for row in selected:
            decide(request, row, form.cleaned_data)
        model_admin.message_user(request, f"Done for {len(selected)}.", messages.SUCCESS)
        return None
    return render(
        request,
        "admin/portal/decision.html",
        {
            **model_admin.admin_site.each_context(request),
            "title": f"{action.capitalize()}: {len(selected)} waiting",
            "items": selected,
            "action": action,
            "form": form,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        },
    )


class ApprovalAdmin(ReadOnlyAdmin):
    """The operators' screen of one kind of the approval workflow (``tenants.approvals``):
    the ones waiting for a decision first, approved, or rejected with a reason, each through
    the kind's service. A kind says which state waits (``waiting``), how its list is ordered
    after that, and how it approves and rejects one (``approve_one``, ``reject_one``); one
    whose approval takes details (a quota request's amount) names their form."""

    waiting: str
    waiting_order: tuple[str, ...] = ()
    approval_form: type[forms.Form] | None = None
    actions = ["approve", "reject"]

    def get_queryset(self, request):
        queryset = requested_first(super().get_queryset(request), self.waiting, *self.waiting_order)
        related = self.list_select_related
        return queryset.select_related(*related) if isinstance(related, list | tuple) else queryset

    def approve_one(self, request, row, details: dict) -> None:
        raise NotImplementedError

    def reject_one(self, request, row, reason: str) -> None:
        raise NotImplementedError

    @admin.action(description="Approve the selected that wait for a decision")
    def approve(self, request, queryset):
        waiting = queryset.filter(state=self.waiting)
        if self.approval_form is None:
            act_on_each(
                self, request, waiting, lambda r, row: self.approve_one(r, row, {}), done="Approved"
            )
            return None
        return decide_with_form(
            self,
            request,
            waiting,
            action="approve",
            form_class=self.approval_form,
            decide=self.approve_one,
        )

    @admin.action(description="Reject the selected that wait for a decision, with a reason")
    def reject(self, request, queryset):
        return decide_with_form(
            self,
            request,
            queryset.filter(state=self.waiting),
            action="reject",
            form_class=RejectionForm,
            decide=lambda r, row, details: self.reject_one(r, row, details["reason"]),
        )


@admin.register(SentMail)
class SentMailAdmin(ReadOnlyAdmin):
    """What was mailed to whom, for operators asked "did they get the mail?": read-only (the
    record is what makes a mail go out once), searched by event key or recipient."""

    list_display = ("sent_at", "key", "recipient", "subject")
    search_fields = ("key", "recipient")
    date_hierarchy = "sent_at"
    ordering = ("-sent_at",)
