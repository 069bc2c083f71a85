"""Operator screens for the catalog. Saving goes through the services; price versions are
only ever added (none in the past), never edited or deleted."""

from django import forms
from django.contrib import admin, messages
from django.http import HttpResponse

from portal import clock
from portal.admin import (
    ApprovalAdmin,
    ReadOnlyAdmin,
    act_on_each,
    decide_with_form,
    requested_first,
)
from portal.errors import DomainError
from tenants.permissions import Caller, caller_of

from . import exports, selectors, services
from .models import (
    BillingRecord,
    CancellationCharge,
    CatalogItem,
    ContractCredit,
    CostModel,
    Credit,
    Invoice,
    InvoiceLine,
    Order,
    PriceVersion,
    ShowbackSetting,
    UsageInterval,
    UsageReconciliation,
)


def warn_of_unpriced(request) -> None:
    """An operator's list page warns of use rated with no price in force (billed at nothing;
    its invoices are held) and of what the cluster offers that no list price covers."""
    used = selectors.usage_unpriced()
    if used:
        listed = "; ".join(str(use) for use in used[:5]) + ("; …" if len(used) > 5 else "")
        messages.warning(
            request,
            f"Use with no price in force, billed at nothing and held from issue: {listed}."
            ' Price it: Billing records, filter No price in force, then "Price the'
            ' selected" once the catalog has a price.',
        )
    offered = selectors.resources_unpriced(at=clock.now())
    if offered:
        messages.warning(
            request,
            "The cluster offers what no list price covers: "
            + "; ".join(str(resource) for resource in offered)
            + ".",
        )


class PricedFilter(admin.SimpleListFilter):
    title = "price"
    parameter_name = "priced"

    def lookups(self, request, model_admin):
        return [("no", "No price in force"), ("yes", "Priced")]

    def queryset(self, request, queryset):
        if self.value() == "no":
            return queryset.filter(unit_price__isnull=True)
        if self.value() == "yes":
            return queryset.filter(unit_price__isnull=False)
        return queryset


class WarnsOfUnpriced:
    """Its list page warns of unpriced use (``warn_of_unpriced``)."""

    def changelist_view(self, request, extra_context=None):
        if request.method == "GET":
            warn_of_unpriced(request)
        return super().changelist_view(request, extra_context)


class PriceVersionInline(admin.TabularInline):
    model = PriceVersion
    fields = ["organization", "unit_price", "effective_from", "created_at", "created_by"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(CatalogItem)
class CatalogItemAdmin(WarnsOfUnpriced, admin.ModelAdmin):
    list_display = ["name", "slug", "kind", "gpu_class", "tier", "public", "active_until"]
    list_filter = ["kind", "gpu_class", "public"]
    search_fields = ["name", "slug"]
    filter_horizontal = ["organizations"]
    inlines = [PriceVersionInline]

    def has_delete_permission(self, request, obj=None) -> bool:
        # An item is retired with "active until": its prices stay what orders and invoices
        # were charged at.
        return False

    def save_model(self, request, obj, form, change) -> None:
        services.catalog_item_save(
            caller=Caller(user=request.user),
            item=obj,
            organizations=list(form.cleaned_data.get("organizations", [])),
        )

    def save_related(self, request, form, formsets, change) -> None:
        # The organizations offered the item were saved (and audited) with it; its prices
        # are added on their own page.
        return None


class AddOnlyAdmin(admin.ModelAdmin):
    """Rows added, never changed nor deleted: what invoices and closed books took stays as
    it was. Saving calls the kind's service (``save_model``)."""

    def has_change_permission(self, request, obj=None) -> bool:
        return obj is None

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class ServiceCheckedForm(forms.ModelForm):
    """A form whose data its service checks too (``problems``, by field), each problem shown on
    its field instead of a failed save."""

    def problems(self, data: dict) -> dict[str, list[str]]:
        raise NotImplementedError

    def clean(self):
        data = super().clean()
        for field, errors in self.problems(data).items():
            self.add_error(field, errors)
        return data


class PriceVersionForm(ServiceCheckedForm):
    class Meta:
        model = PriceVersion
        fields = ["item", "organization", "unit_price", "effective_from"]

    def problems(self, data: dict) -> dict[str, list[str]]:
        if not data.get("effective_from"):
            return {}
        return services.price_version_problems(
            effective_from=data["effective_from"], now=clock.now()
        )


@admin.register(PriceVersion)
class PriceVersionAdmin(AddOnlyAdmin):
    """New prices, each from a moment not in the past."""

    form = PriceVersionForm
    list_display = ["item", "organization", "unit_price", "effective_from", "created_by"]
    list_filter = ["item"]

    def save_model(self, request, obj, form, change) -> None:
        services.price_version_add(
            caller=Caller(user=request.user),
            item=obj.item,
            unit_price=obj.unit_price,
            effective_from=obj.effective_from,
            organization=obj.organization,
        )


class CostModelForm(ServiceCheckedForm):
    class Meta:
        model = CostModel
        fields = [
            "pool",
            "node",
            "purchase_price_per_gpu",
            "lifetime_months",
            "nameplate_watts",
            "price_per_kwh",
            "overhead_per_node_hour",
            "effective_from",
        ]

    def problems(self, data: dict) -> dict[str, list[str]]:
        if not (data.get("effective_from") and data.get("pool")):
            return {}
        return services.cost_model_problems(
            pool=data["pool"],
            node=data.get("node"),
            effective_from=data["effective_from"],
            now=clock.now(),
        )


@admin.register(CostModel)
class CostModelAdmin(AddOnlyAdmin):
    """What the pools' GPUs cost the operator: versions added from a moment not in the past,
    never changed (the books of a closed month stay as they were)."""

    form = CostModelForm
    list_display = [*CostModelForm.Meta.fields, "created_by"]
    list_filter = ["pool"]

    def save_model(self, request, obj, form, change) -> None:
        services.cost_model_add(
            caller=Caller(user=request.user),
            **{name: getattr(obj, name) for name in form.Meta.fields},
        )


@admin.register(ShowbackSetting)
class ShowbackSettingAdmin(admin.ModelAdmin):
    """What each organization is shown of its own showback: off, GPU-hours only, or GPU-hours
    and cost (an organization not listed: ``PORTAL_BOOKS_SHOWBACK``). Set through the service,
    audited; never deleted (set it off instead)."""

    list_display = ["organization", "level", "updated_by", "updated_at"]
    list_filter = ["level"]
    search_fields = ["organization__slug", "organization__name"]
    fields = ["organization", "level"]

    def get_readonly_fields(self, request, obj=None) -> list[str]:
        return ["organization"] if obj else []

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def save_model(self, request, obj, form, change) -> None:
        services.showback_level_set(
            caller=Caller(user=request.user), organization=obj.organization, level=obj.level
        )


@admin.register(Credit)
class CreditAdmin(AddOnlyAdmin):
    """Credit granted to organizations: added, never changed (what invoices took stays
    explained)."""

    list_display = ["organization", "amount", "reason", "granted_by", "granted_at"]
    list_filter = ["organization"]
    fields = ["organization", "amount", "reason"]

    def save_model(self, request, obj, form, change) -> None:
        obj.pk = services.credit_grant(
            caller=Caller(user=request.user),
            organization=obj.organization,
            amount=obj.amount,
            reason=obj.reason,
        ).pk


@admin.register(Order)
class OrderAdmin(ApprovalAdmin):
    """Submitted orders first: they wait for an operator; approved ones are fulfilled by the
    worker, and failed fulfilments retried from here."""

    list_display = ["organization", "item", "quantity", "starts_at", "ends_at", "total", "state"]
    list_filter = ["state", "item__kind"]
    search_fields = ["organization__slug", "item__slug"]
    list_select_related = ["organization", "item"]
    waiting = Order.State.SUBMITTED
    waiting_order = ("-created_at",)
    actions = ["approve", "reject", "retry"]

    def approve_one(self, request, row, details) -> None:
        services.order_approve(caller=caller_of(request), order=row)

    def reject_one(self, request, row, reason) -> None:
        services.order_reject(caller=caller_of(request), order=row, reason=reason)

    @admin.action(description="Retry the fulfilment of failed orders")
    def retry(self, request, queryset):
        act_on_each(
            self,
            request,
            queryset.filter(state__in=[Order.State.FAILED, Order.State.FULFILLING]),
            lambda request, it: services.order_fulfil_retry(caller=caller_of(request), order=it),
            done="Queued again:",
        )


@admin.register(CancellationCharge)
class CancellationChargeAdmin(ReadOnlyAdmin):
    """Recorded by the worker from the terms; never edited."""

    list_display = ["organization", "reservation", "item", "cancelled_at", "percent", "amount"]
    list_filter = ["item"]
    search_fields = ["organization__slug", "organization__name"]


@admin.register(UsageInterval)
class UsageIntervalAdmin(ReadOnlyAdmin):
    """Derived from placements by the meter; never edited."""

    list_display = ["organization", "workload", "gpu_class", "resource", "amount", "started_at"]
    list_filter = ["resource", "gpu_class"]
    search_fields = ["organization__slug", "workload__name"]


@admin.register(BillingRecord)
class BillingRecordAdmin(WarnsOfUnpriced, ReadOnlyAdmin):
    """Rated by the meter; never edited, but for pricing use rated with no price in force."""

    list_display = [
        "organization",
        "gpu_class",
        "mig_profile",
        "resource",
        "tier",
        "charge",
        "starts_at",
        "quantity_seconds",
        "unit_price",
        "cost",
    ]
    list_filter = [PricedFilter, "resource", "charge", "gpu_class"]
    search_fields = ["organization__slug"]
    actions = ["price"]

    @admin.action(description="Price the selected unpriced use at the price now in force")
    def price(self, request, queryset):
        priced = services.usage_unpriced_price(caller=Caller(user=request.user), records=queryset)
        left = queryset.filter(unit_price__isnull=True).count()
        self.message_user(
            request,
            f"Priced {priced} records; their months' drafts were made again."
            + (f" {left} still have no price in force: add one to the catalog." if left else ""),
            messages.WARNING if left else messages.SUCCESS,
        )


@admin.register(ContractCredit)
class ContractCreditAdmin(ReadOnlyAdmin):
    """Credited by the meter from evictions and reservations; never edited."""

    list_display = ["organization", "kind", "at", "starts_at", "quantity_seconds", "amount"]
    list_filter = ["kind", "gpu_class"]
    search_fields = ["organization__slug"]


@admin.register(UsageReconciliation)
class UsageReconciliationAdmin(ReadOnlyAdmin):
    list_display = ["starts_at", "ends_at", "ran_at", "organizations", "balanced"]


class InvoiceLineInline(admin.TabularInline):
    model = InvoiceLine
    fields = ["description", "hours", "unit_price", "amount"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


class VoidForm(forms.Form):
    reason = forms.CharField(max_length=500, widget=forms.Textarea(attrs={"rows": 3}))


@admin.register(Invoice)
class InvoiceAdmin(WarnsOfUnpriced, ReadOnlyAdmin):
    """Finance: drafts first; issue, mark paid, void with a reason, download. Changes only
    through actions; an issued invoice never changes."""

    list_display = [
        "__str__",
        "organization",
        "month",
        "period_start",
        "state",
        "total",
        "updated_at",
        "issued_at",
    ]
    list_filter = ["state", "month"]
    search_fields = ["number", "organization__slug"]
    inlines = [InvoiceLineInline]
    actions = ["issue", "mark_paid", "void", "download_csv"]

    def get_queryset(self, request):
        return requested_first(
            super().get_queryset(request), Invoice.State.DRAFT, "-period_start"
        ).select_related("organization")

    @admin.action(description="Issue the drafts whose period has ended (then never changed)")
    def issue(self, request, queryset):
        """Each draft through the service; one it refuses (its period has not ended, or it
        holds unpriced use) is said with the reason, and the others are issued."""
        caller, issued = Caller(user=request.user), 0
        for invoice in queryset.filter(state=Invoice.State.DRAFT).select_related("organization"):
            try:
                services.invoice_issue(caller=caller, invoice=invoice)
            except DomainError as error:
                self.message_user(
                    request, f"Not issued: {invoice.organization}: {error.message}", messages.ERROR
                )
            else:
                issued += 1
        if issued:
            self.message_user(request, f"Issued {issued}.", messages.SUCCESS)

    @admin.action(description="Mark the issued as paid")
    def mark_paid(self, request, queryset):
        act_on_each(
            self,
            request,
            queryset.filter(state=Invoice.State.ISSUED),
            lambda request, it: services.invoice_mark_paid(caller=caller_of(request), invoice=it),
            done="Marked paid:",
        )

    @admin.action(description="Void the issued, with a reason")
    def void(self, request, queryset):
        return decide_with_form(
            self,
            request,
            queryset.filter(state=Invoice.State.ISSUED),
            action="void",
            form_class=VoidForm,
            decide=lambda request, invoice, data: services.invoice_void(
                caller=caller_of(request), invoice=invoice, reason=data["reason"]
            ),
        )

    @admin.action(description="Download the selected as one CSV")
    def download_csv(self, request, queryset):
        response = HttpResponse(exports.month_csv(queryset), content_type="text/csv")
        response["Content-Disposition"] = 'attachment; filename="invoices.csv"'
        return response
