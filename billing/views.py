"""The web console's billing pages: an organization's dashboard, the catalog with the prices
that apply, orders, invoices, usage and budgets."""

from datetime import timedelta

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from portal import clock
from portal.console import REFUSED, attempt
from portal.errors import NotFound
from scheduling import selectors as scheduling_selectors
from scheduling import services as scheduling
from scheduling.models import Workload
from tenants import selectors as tenant_selectors
from tenants.permissions import Action, caller_of, role_allows, sees_money

from . import charts, exports, selectors, services
from .forms import BudgetForm, OrderForm, UsageMonthForm
from .models import ShowbackSetting
from .pricing import month_bounds


@login_required
def dashboard(request, org_slug: str):
    """An organization at a glance: its quotas as bars, its work running and waiting (with why),
    its reservations ahead, and for owners and admins the month's GPU-hours per day, spend,
    forecast and budget."""
    caller = caller_of(request)
    organization = tenant_selectors.organization_get(caller=caller, slug=org_slug)
    workloads = scheduling_selectors.organization_workloads(
        caller=caller, organization=organization
    )
    now = clock.now()
    context = {
        "organization": organization,
        "quotas": [
            quota
            for quota in scheduling_selectors.quota_overview(
                caller=caller, organization=organization
            )
            if quota.grant.project_id is None and quota.grant.limit
        ],
        "counts": dict(
            workloads.values_list("state").annotate(count=Count("pk")).order_by("state")
        ),
        "pending": workloads.filter(state=Workload.State.PENDING).order_by(
            "queue_position", "submitted_at"
        )[:10],
        "running": workloads.filter(state=Workload.State.RUNNING).order_by("-started_at")[:10],
        "reservations": scheduling_selectors.reservations_ahead(
            caller=caller, organization=organization, now=now
        )[:5],
        "currency": settings.PORTAL_CURRENCY,
    }
    if role_allows(organization.my_role, Action.INVOICE_VIEW):
        start, end = selectors.period_of(organization=organization, at=now)
        summary = selectors.usage_summary(
            caller=caller, organization=organization, starts_at=start, ends_at=end
        )
        context["summary"] = summary
        context["chart"] = charts.daily_by_class(summary.rows)
        context["budget"] = next(
            (
                budget
                for budget in selectors.budget_list(caller=caller, organization=organization)
                if budget.project_id is None
            ),
            None,
        )
    return render(request, "billing/dashboard.html", context)


@login_required
def catalog(request, org_slug: str):
    caller = caller_of(request)
    organization = tenant_selectors.organization_get(caller=caller, slug=org_slug)
    return render(
        request,
        "billing/catalog.html",
        {
            "organization": organization,
            "items": selectors.catalog_for(
                caller=caller, organization=organization, at=clock.now()
            ),
            "currency": settings.PORTAL_CURRENCY,
        },
    )


@login_required
def orders(request, org_slug: str):
    caller = caller_of(request)
    organization = tenant_selectors.organization_get(caller=caller, slug=org_slug)
    can_order = role_allows(organization.my_role, Action.ORDER_MANAGE)
    money = sees_money(organization.my_role)
    form = OrderForm(
        request.POST or None,
        items=selectors.catalog_for(caller=caller, organization=organization, at=clock.now()),
        projects=tenant_selectors.project_list(caller=caller, organization=organization),
        pools=scheduling_selectors.pool_list(),
    )
    if request.method == "POST" and can_order and form.is_valid():
        made = attempt(
            request,
            form,
            lambda: services.order_create(
                caller=caller, organization=organization, request=form.as_request()
            ),
        )
        if made is not REFUSED:
            state = made.get_state_display().lower()
            messages.success(request, f"Ordered: {made.total} {settings.PORTAL_CURRENCY}, {state}.")
            return redirect("billing:orders", org_slug)
    return render(
        request,
        "billing/orders.html",
        {
            "organization": organization,
            "orders": selectors.order_list(caller=caller, organization=organization)[:100],
            "charges": (
                selectors.cancellation_charge_list(caller=caller, organization=organization)[:100]
                if money
                else []
            ),
            "form": form,
            "can_order": can_order,
            "money": money,
            "currency": settings.PORTAL_CURRENCY,
        },
    )


@login_required
@require_POST
def order_cancel(request, org_slug: str, order_id: str):
    caller = caller_of(request)
    organization = tenant_selectors.organization_get(caller=caller, slug=org_slug)
    order = selectors.order_get(caller=caller, organization=organization, pk=order_id)
    if (
        attempt(request, None, lambda: services.order_cancel(caller=caller, order=order))
        is not REFUSED
    ):
        messages.success(request, "Order cancelled.")
    return redirect("billing:orders", org_slug)


# What an operator decides on the approvals page: the service that approves and the one that
# rejects (with a reason), by kind.
DECISIONS = {
    "reservation": (
        lambda caller, pk: scheduling_selectors.reservation_for_operator(caller=caller, pk=pk),
        lambda caller, it: scheduling.reservation_approve(caller=caller, reservation=it),
        lambda caller, it, reason: scheduling.reservation_reject(
            caller=caller, reservation=it, reason=reason
        ),
    ),
    "quota-request": (
        lambda caller, pk: scheduling_selectors.quota_request_for_operator(caller=caller, pk=pk),
        lambda caller, it: scheduling.quota_request_approve(caller=caller, quota_request=it),
        lambda caller, it, reason: scheduling.quota_request_reject(
            caller=caller, quota_request=it, reason=reason
        ),
    ),
    "order": (
        lambda caller, pk: selectors.order_for_operator(caller=caller, pk=pk),
        lambda caller, it: services.order_approve(caller=caller, order=it),
        lambda caller, it, reason: services.order_reject(caller=caller, order=it, reason=reason),
    ),
}


@login_required
def metering(request):
    """Operators: the last comparison of placed with billed GPU-seconds."""
    return render(
        request,
        "billing/metering.html",
        {"result": selectors.usage_reconciliation_last(caller=caller_of(request))},
    )


@login_required
def books(request):
    """Operators: a UTC month's books, pool by pool: hours by category (a stacked bar), cost,
    revenue, margin, utilisation, the idlest reservations and guarantees; ``?format=csv`` or
    ``json`` downloads them."""
    form = UsageMonthForm(request.GET)
    now = clock.now()
    year, month = form.year_month() or (now.year, now.month)
    kept = selectors.month_books_for_operator(caller=caller_of(request), year=year, month=month)
    kind = request.GET.get("format")
    if kind in ("csv", "json"):
        return exports.books_file(kept, kind)
    return render(
        request,
        "billing/books.html",
        {
            "form": form,
            "month": f"{year}-{month:02d}",
            "kept": kept,
            "refresh_seconds": settings.PORTAL_BOOKS_REFRESH_SECONDS,
            "pools": [(pool, charts.books_by_category(pool.hours)) for pool in kept.pools],
            "legend": charts.books_legend(),
            "bar_width": charts.POOL_BAR_WIDTH,
            "currency": settings.PORTAL_CURRENCY,
        },
    )


@login_required
def approvals(request):
    """Operators: every reservation, quota request and order waiting, with one-click
    decisions."""
    return render(
        request,
        "billing/approvals.html",
        {"pending": selectors.approvals_pending(caller=caller_of(request))},
    )


@login_required
@require_POST
def approval_decide(request, kind: str, pk: str, decision: str):
    if kind not in DECISIONS or decision not in ("approve", "reject"):
        raise NotFound("No such decision.")
    caller = caller_of(request)
    load, approve, reject = DECISIONS[kind]
    item = load(caller, pk)
    if decision == "approve":
        done = attempt(request, None, lambda: approve(caller, item))
    else:
        done = attempt(request, None, lambda: reject(caller, item, request.POST.get("reason", "")))
    if done is not REFUSED:
        decided = "approved" if decision == "approve" else "rejected"
        messages.success(request, f"{kind.replace('-', ' ').capitalize()} {decided}: {item}.")
    return redirect("billing:approvals")


@login_required
def invoices(request, org_slug: str):
    """Owners and admins: the organization's invoices, each to download."""
    caller = caller_of(request)
    organization = tenant_selectors.organization_get(caller=caller, slug=org_slug)
    return render(
        request,
        "billing/invoices.html",
        {
            "organization": organization,
            "invoices": selectors.invoice_list(caller=caller, organization=organization)[:120],
            "credit_balance": selectors.credit_balance(organization=organization),
            "currency": settings.PORTAL_CURRENCY,
            "showback_offered": selectors.showback_level(organization=organization)
            != ShowbackSetting.Level.OFF,
        },
    )


@login_required
def showback(request, org_slug: str):
    """Owners and admins, where the operator offers showback: a UTC month of the
    organization's GPU-hours of each pool and its share of idle, and what they cost the
    operator where it shows costs (404 otherwise, as the API)."""
    caller = caller_of(request)
    organization = tenant_selectors.organization_get(caller=caller, slug=org_slug)
    form = UsageMonthForm(request.GET)
    now = clock.now()
    year, month = form.year_month() or (now.year, now.month)
    starts_at, ends_at = month_bounds(year, month)
    pools = selectors.showback(
        caller=caller, organization=organization, starts_at=starts_at, ends_at=ends_at
    )
    return render(
        request,
        "billing/showback.html",
        {
            "organization": organization,
            "form": form,
            "month": f"{year}-{month:02d}",
            "pools": pools,
            "with_cost": selectors.showback_level(organization=organization)
            == ShowbackSetting.Level.COST,
            "idle_sharing": settings.PORTAL_BOOKS_IDLE_SHARING,
            "currency": settings.PORTAL_CURRENCY,
        },
    )


@login_required
def invoice_download(request, org_slug: str, invoice_id: str, kind: str):
    caller = caller_of(request)
    organization = tenant_selectors.organization_get(caller=caller, slug=org_slug)
    invoice = selectors.invoice_get(caller=caller, organization=organization, pk=invoice_id)
    return exports.invoice_file(invoice, kind)


@login_required
def usage(request, org_slug: str):
    """Owners and admins: a month's GPU-hours and cost by day (stacked by class), by class and
    by project, in the organization's time zone; ``?format=csv`` downloads its rows."""
    caller = caller_of(request)
    organization = tenant_selectors.organization_get(caller=caller, slug=org_slug)
    form = UsageMonthForm(request.GET)
    now = clock.now()
    chosen = form.year_month()
    if chosen is None:
        starts_at, ends_at = selectors.period_of(organization=organization, at=now)
    else:
        starts_at, ends_at = selectors.invoice_period(
            organization=organization, year=chosen[0], month=chosen[1]
        )
    summary = selectors.usage_summary(
        caller=caller, organization=organization, starts_at=starts_at, ends_at=ends_at
    )
    month = starts_at.astimezone(organization.zone) + timedelta(days=1)
    if request.GET.get("format") == "csv":
        response = HttpResponse(exports.usage_csv(summary.rows), content_type="text/csv")
        response["Content-Disposition"] = (
            f'attachment; filename="usage-{organization.slug}-{month:%Y-%m}.csv"'
        )
        return response
    return render(
        request,
        "billing/usage.html",
        {
            "organization": organization,
            "form": form,
            "month": month,
            "previous": (month - timedelta(days=2)).strftime("%Y-%m"),
            "next": (month + timedelta(days=31)).strftime("%Y-%m") if ends_at <= now else None,
            "summary": summary,
            "chart": charts.daily_by_class(summary.rows),
            "by_class": charts.shares(summary.rows, by=charts.resource_label),
            "by_project": charts.shares(summary.rows, by=lambda row: row["project"] or "—"),
            "currency": settings.PORTAL_CURRENCY,
            "showback_offered": selectors.showback_level(organization=organization)
            != ShowbackSetting.Level.OFF,
        },
    )


@login_required
def budgets(request, org_slug: str):
    """Owners and admins: the budgets with this month's spend, and a form to set one."""
    caller = caller_of(request)
    organization = tenant_selectors.organization_get(caller=caller, slug=org_slug)
    listed = selectors.budget_list(caller=caller, organization=organization)
    form = BudgetForm(
        request.POST or None,
        projects=tenant_selectors.project_list(caller=caller, organization=organization),
    )
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        saved = attempt(
            request,
            form,
            lambda: services.budget_save(
                caller=caller,
                organization=organization,
                monthly_amount=data["monthly_amount"],
                project=data["project"] or None,
                thresholds=data["thresholds"],
                hard_stop=data["hard_stop"],
            ),
        )
        if saved is not REFUSED:
            messages.success(request, f"Budget set: {saved}.")
            return redirect("billing:budgets", org_slug)
    return render(
        request,
        "billing/budgets.html",
        {
            "organization": organization,
            "budgets": listed,
            "form": form,
            "can_manage": role_allows(organization.my_role, Action.BUDGET_MANAGE),
            "currency": settings.PORTAL_CURRENCY,
        },
    )


@login_required
@require_POST
def budget_delete(request, org_slug: str, budget_id: str):
    caller = caller_of(request)
    organization = tenant_selectors.organization_get(caller=caller, slug=org_slug)
    budget = selectors.budget_get(caller=caller, organization=organization, pk=budget_id)
    if (
        attempt(request, None, lambda: services.budget_delete(caller=caller, budget=budget))
        is not REFUSED
    ):
        messages.success(request, "Budget removed.")
    return redirect("billing:budgets", org_slug)
