"""The web console's workload pages (submit, follow, cancel), reservation page (ask, see the
pools' timelines, cancel) and quota page (see, ask for more)."""

from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_POST

from portal import clock
from portal.console import REFUSED, attempt, filters_given, query_without_page
from portal.errors import Conflict
from tenants import selectors as tenant_selectors
from tenants.lookups import organization_of, project_of
from tenants.permissions import Action, caller_of, role_allows

from . import insights as scheduling_insights
from . import selectors, services
from .api.filters import WorkloadFilter
from .api.operator_serializers import CalibrationQuery
from .backends import workload_backend
from .cluster import ClusterError
from .forms import QuotaRequestForm, ReservationForm, WorkloadSubmitForm

WORKLOADS_PER_PAGE = 50
RESERVATIONS_SHOWN = 200
QUOTA_REQUESTS_SHOWN = 100
QUEUE_SHOWN = 50
# The workload page's log pane: the last lines it shows at first and reads at each poll.
LOG_PANE_LINES = 200
# The estimates page's periods, in days, and the one shown by default.
CALIBRATION_PERIODS = (1, 7, 30, 90)
CALIBRATION_DAYS = 30


@login_required
def workloads(request, org_slug: str, project_slug: str):
    caller = caller_of(request)
    project = project_of(request, org_slug, project_slug)
    organization = project.organization
    # The API's filters (state and kind in any case, tier, name), so a search reads the same
    # in the console and in a script.
    filters = WorkloadFilter(
        filters_given(request.GET),
        queryset=selectors.workload_list(caller=caller, project=project),
    )
    # Ids of their own: the submit form below has fields of the same names.
    filters.form.auto_id = "filter_%s"
    valid = not filters.is_bound or filters.is_valid()
    workloads = filters.qs if valid else filters.queryset.none()
    listed = {
        "organization": organization,
        "project": project,
        "workloads": Paginator(workloads, WORKLOADS_PER_PAGE).get_page(request.GET.get("page")),
        "filters": filters,
        "query": query_without_page(request.GET),
    }
    if request.htmx:  # the table refreshing itself
        return render(request, "scheduling/_workload_table.html", listed)
    form = WorkloadSubmitForm(
        request.POST or None,
        tiers=selectors.tier_list(),
        gpu_classes=selectors.gpu_class_list(),
        granted=selectors.quota_class_most_granted(caller=caller, organization=organization),
        regions=selectors.region_list(),
    )
    checked = None
    if request.method == "POST" and form.is_valid() and "check" in request.POST:
        # The "Check" button: what the scheduler would do with it, nothing submitted.
        checked = attempt(
            request,
            form,
            lambda: services.workloads_what_if(
                caller=caller, project=project, requests=[form.as_request()]
            ),
        )
    elif request.method == "POST" and form.is_valid():
        workload = attempt(
            request,
            form,
            lambda: services.workload_submit(
                caller=caller, project=project, request=form.as_request()
            ),
        )
        if workload is not REFUSED:
            messages.success(request, f"Workload {workload.name} submitted; it is queued.")
            return redirect("workloads:detail", org_slug, project_slug, workload.name)
    return render(
        request,
        "scheduling/workloads.html",
        {
            **listed,
            "provisioning": selectors.project_provisioning(caller=caller, project=project),
            "quotas": selectors.quota_overview(caller=caller, organization=organization),
            "form": form,
            "can_submit": role_allows(organization.my_role, Action.WORKLOAD_SUBMIT),
            "what_if": None if checked is REFUSED else checked,
        },
    )


@login_required
def workload_detail(request, org_slug: str, project_slug: str, name: str):
    caller = caller_of(request)
    project = project_of(request, org_slug, project_slug)
    organization = project.organization
    workload = selectors.workload_get(caller=caller, project=project, name=name)
    can_cancel = not workload.is_final and selectors.workload_cancel_permitted(
        caller=caller, workload=workload, role=organization.my_role
    )
    return render(
        request,
        # The live part alone when it refreshes itself.
        "scheduling/_workload_live.html" if request.htmx else "scheduling/workload.html",
        {
            "organization": organization,
            "project": project,
            "workload": workload,
            "events": selectors.workload_events(workload=workload),
            "clock": selectors.workload_clock(workload, now=clock.now()),
            "can_cancel": can_cancel,
            "log_pane_lines": LOG_PANE_LINES,
            "alternatives": services.workload_alternatives(caller=caller, workload=workload),
        },
    )


@login_required
def workload_logs(request, org_slug: str, project_slug: str, name: str):
    """The log pane's new lines, for htmx: the last ones at first, then those written after
    `after` (the time of the last line shown), and the element that asks again in 3 s while
    the workload may still write."""
    caller = caller_of(request)
    project = project_of(request, org_slug, project_slug)
    workload = selectors.workload_get(caller=caller, project=project, name=name)
    try:
        after = parse_datetime(request.GET.get("after", ""))
    except ValueError:  # well formed, but no such time: read as if it were the first
        after = None
    since = after + timedelta(microseconds=1) if after and after.tzinfo else None
    lines, note, following = [], "", not workload.is_final
    try:
        logs = selectors.workload_logs(
            workload=workload,
            backend=workload_backend(workload.pk),
            tail=LOG_PANE_LINES,
            since=since,
        )
        lines = list(logs.lines)
        if logs.kept is not None:
            note, following = _kept_note(logs.kept), False
    except Conflict as refusal:
        note, following = refusal.message, following and refusal.code != "logs_gone"
    except ClusterError as error:
        note = f"The cluster did not answer: {error}"
    return render(
        request,
        "scheduling/_workload_logs.html",
        {
            "organization": project.organization,
            "project": project,
            "workload": workload,
            "lines": [selectors.log_text(line, replicas_shown=workload.replicas) for line in lines],
            "after": lines[-1].at.isoformat() if lines else request.GET.get("after", ""),
            "note": note,
            "following": following,
        },
    )


def _kept_note(kept: selectors.KeptTail) -> str:
    cut = " (the beginning of a longer log is lost)" if kept.truncated else ""
    return (
        f"Its containers were removed: the last lines of its logs, kept at "
        f"{kept.captured_at:%Y-%m-%d %H:%M:%S} UTC{cut}."
    )


@login_required
@require_POST
def workload_cancel(request, org_slug: str, project_slug: str, name: str):
    caller = caller_of(request)
    project = project_of(request, org_slug, project_slug)
    workload = selectors.workload_get(caller=caller, project=project, name=name)
    cancelled = attempt(
        request, None, lambda: services.workload_cancel(caller=caller, workload=workload)
    )
    if cancelled is not REFUSED:
        messages.success(request, f"Workload {workload.name} cancelled; its GPUs are released.")
    return redirect("workloads:detail", org_slug, project_slug, name)


@login_required
def reservations(request, org_slug: str):
    caller = caller_of(request)
    organization = organization_of(request, org_slug)
    can_reserve = role_allows(organization.my_role, Action.RESERVATION_MANAGE)
    now = clock.now()
    form = ReservationForm(
        request.POST or None,
        pools=selectors.pool_list(),
        projects=tenant_selectors.project_list(caller=caller, organization=organization),
    )
    if request.method == "POST" and can_reserve and form.is_valid():
        held = attempt(
            request,
            form,
            lambda: services.reservations_request(
                caller=caller, organization=organization, request=form.as_request()
            ),
        )
        if held is not REFUSED:
            messages.success(
                request, f"Reserved in {held[0].pool.name}; it awaits an operator's approval."
            )
            return redirect("workloads:reservations", org_slug)
    calendar = selectors.capacity_ahead(caller=caller, organization=organization, now=now)
    return render(
        request,
        "scheduling/reservations.html",
        {
            "organization": organization,
            "capacity": _strips(calendar, zone=organization.zone),
            "windows": _windows(form, calendar, zone=organization.zone, now=now),
            "reservations": selectors.reservations_on_record(
                caller=caller, organization=organization
            )[:RESERVATIONS_SHOWN],
            "timeline": selectors.reservation_timeline(
                caller=caller,
                organization=organization,
                now=now,
                days=14,
            ),
            "form": form,
            "can_reserve": can_reserve,
        },
    )


@login_required
def reservation_windows(request, org_slug: str):
    """The reservation form's proposals for the class, GPUs, length and pool it holds now."""
    caller = caller_of(request)
    organization = organization_of(request, org_slug)
    now = clock.now()
    form = ReservationForm(
        request.GET,
        pools=selectors.pool_list(),
        projects=tenant_selectors.project_list(caller=caller, organization=organization),
    )
    return render(
        request,
        "scheduling/_reservation_windows.html",
        {
            "organization": organization,
            "windows": _windows(
                form,
                selectors.capacity_ahead(caller=caller, organization=organization, now=now),
                zone=organization.zone,
                now=now,
            ),
        },
    )


def _windows(form: ReservationForm, calendar, *, zone, now) -> list:
    """The earliest windows where the form's whole GPUs fit on one node, else on one rack;
    none for MIG instances or a form missing what a block needs."""
    ask = form.block_asked()
    if ask is None:
        return []
    gpu_class, pool, block = ask
    for level in selectors.LEVELS:
        at_level = selectors.BlockAsk(gpus=block.gpus, level=level, hours=block.hours)
        windows = selectors.block_windows(
            calendar.pools, at_level, zone=zone, now=now, gpu_class=gpu_class, pool=pool
        )
        if windows:
            return windows
    return []


def _strips(calendar, *, zone) -> list[dict]:
    """Each pool's hours as rows of a day's 24 cells, for a compact strip: the cell's class
    says how much is free; its title says free, reserved and busy at that hour."""
    strips = []
    for pool in calendar.pools:
        cells = []
        for hour in range(calendar.hours):
            at = (calendar.start + timedelta(hours=hour)).astimezone(zone)
            free = int(pool.free[hour])
            state = "full" if free == 0 else "part" if free < pool.schedulable else "free"
            title = (
                f"{at:%a %d %b %H:%M}: {free} free, {int(pool.reserved[hour])} reserved,"
                f" {int(pool.busy[hour])} busy"
            )
            cells.append({"state": state, "title": title, "at": at})
        rows = [cells[i : i + 24] for i in range(0, len(cells), 24)]
        strips.append({"pool": pool, "rows": rows})
    return strips


@login_required
@require_POST
def reservation_cancel(request, org_slug: str, reservation_id: str):
    caller = caller_of(request)
    organization = organization_of(request, org_slug)
    reservation = selectors.reservation_get(
        caller=caller, organization=organization, pk=reservation_id
    )
    cancelled = attempt(
        request, None, lambda: services.reservation_cancel(caller=caller, reservation=reservation)
    )
    if cancelled is not REFUSED:
        messages.success(request, "Reservation cancelled; its GPUs are free again.")
    return redirect("workloads:reservations", org_slug)


@login_required
def quotas(request, org_slug: str):
    caller = caller_of(request)
    organization = organization_of(request, org_slug)
    can_ask = role_allows(organization.my_role, Action.QUOTA_REQUEST)
    form = QuotaRequestForm(
        request.POST or None,
        # A workload's alternative links here with the missing amount filled in.
        initial=QuotaRequestForm.prefill(request.GET),
        classes=selectors.gpu_class_list(),
        projects=tenant_selectors.project_list(caller=caller, organization=organization),
    )
    if request.method == "POST" and can_ask and form.is_valid():
        made = attempt(
            request,
            form,
            lambda: services.quota_request_create(
                caller=caller, organization=organization, ask=form.as_ask()
            ),
        )
        if made is not REFUSED:
            messages.success(request, "Quota requested; operators are told by e-mail.")
            return redirect("workloads:quotas", org_slug)
    return render(
        request,
        "scheduling/quotas.html",
        {
            "organization": organization,
            "quotas": selectors.quota_overview(caller=caller, organization=organization),
            "standing": selectors.fair_share_standing(
                caller=caller, organization=organization, now=clock.now()
            ),
            "requests": selectors.quota_request_list(caller=caller, organization=organization)[
                :QUOTA_REQUESTS_SHOWN
            ],
            "form": form,
            "can_ask": can_ask,
        },
    )


@login_required
def cluster(request):
    """Operators: the clusters (whether each answers) and their pools, free against
    schedulable capacity, node by node, each GPU coloured by the tenant that holds it and
    lettered by its tier."""
    pools = selectors.cluster_overview(caller=caller_of(request))
    cells = [cell for pool in pools for _, gpus in pool.nodes for cell in gpus]
    cells += [
        cell
        for pool in pools
        for uses in pool.mig.values()
        for use in uses
        for cell in use.instances
    ]
    tenants = sorted({cell.tenant for cell in cells if cell.tenant})
    # A hue per tenant, spread around the wheel, so neighbours differ.
    hues = {tenant: (index * 137) % 360 for index, tenant in enumerate(tenants)}
    grids = [
        (
            pool,
            [
                (
                    node,
                    [(gpu, hues.get(gpu.tenant)) for gpu in gpus],
                    sum(1 for g in gpus if g.tenant),
                    [
                        (use, [(cell, hues.get(cell.tenant)) for cell in use.instances])
                        for use in pool.mig.get(node.pk, [])
                    ],
                )
                for node, gpus in pool.nodes
            ],
        )
        for pool in pools
    ]
    tiers = sorted({cell.tier for cell in cells if cell.tenant})
    queue = selectors.queue_across_tenants(caller=caller_of(request))
    return render(
        request,
        "scheduling/cluster.html",
        {
            "grids": grids,
            "clusters": selectors.cluster_states(),
            "legend": sorted(hues.items()),
            "tiers": [(tier[:1].upper(), tier) for tier in tiers],
            "queue": queue[:QUEUE_SHOWN],
            "waiting": queue.count(),
        },
    )


@login_required
def insights(request):
    """Operators: the problems the rules over the measurements find now, in words."""
    return render(
        request,
        "scheduling/insights.html",
        {"insights": scheduling_insights.insights(caller=caller_of(request), now=clock.now())},
    )


@login_required
def estimates(request):
    """Operators: how the start estimates held, per GPU class, over a chosen period."""
    query = CalibrationQuery(data=request.GET)
    days = query.validated_data["days"] if query.is_valid() else CALIBRATION_DAYS
    until = clock.now()
    figures = selectors.estimate_calibration(
        caller=caller_of(request), since=until - timedelta(days=days), until=until
    )
    return render(
        request,
        "scheduling/estimates.html",
        {"figures": figures, "days": days, "periods": CALIBRATION_PERIODS},
    )
