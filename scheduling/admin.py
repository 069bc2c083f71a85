"""Operator screens for the GPU inventory, quotas, tiers, reservations and workloads. Actions
call services."""

from django import forms
from django.contrib import admin, messages

from portal.admin import ApprovalAdmin, ReadOnlyAdmin
from portal.errors import DomainError
from tenants.admin import RefusalsAsMessages
from tenants.permissions import Caller, caller_of

from . import services
from .admin_fairness import FairShareStandingAdmin
from .backends import backend_named
from .models import (
    Cluster,
    Eviction,
    FairShareStanding,
    GpuClass,
    Node,
    NodePool,
    Placement,
    PriorityTier,
    ProvisioningRecord,
    QuotaGrant,
    QuotaRequest,
    Reservation,
    ReservationRule,
    SchedulerState,
    SimulatedNodeState,
    Workload,
    WorkloadEvent,
    WorkloadLogTail,
)


class SettingAdmin(RefusalsAsMessages, admin.ModelAdmin):
    """A setting operators edit here (a GPU class, pool, tier, an organization's reservation
    rule): saved and deleted through the service, which audits it."""

    def save_model(self, request, obj, form, change) -> None:
        services.setting_save(
            caller=Caller(user=request.user), setting=obj, changed=list(form.changed_data)
        )

    def save_related(self, request, form, formsets, change) -> None:
        # No many-to-many fields or inlines here: all of it was saved (and audited) above.
        return None

    def delete_model(self, request, obj) -> None:
        services.setting_delete(caller=Caller(user=request.user), setting=obj)

    def delete_queryset(self, request, queryset) -> None:
        for setting in queryset:
            self.delete_model(request, setting)


admin.site.register(FairShareStanding, FairShareStandingAdmin)


@admin.register(Cluster)
class ClusterAdmin(SettingAdmin):
    """The clusters the portal drives; whether each answers is the portal's to say."""

    list_display = ["name", "region", "backend", "state", "last_seen_at"]
    list_filter = ["region", "backend", "state"]
    search_fields = ["name", "region"]
    readonly_fields = ["state", "last_seen_at"]
    actions = ["answers_stop", "answers_resume"]

    @admin.action(description="Simulate: these clusters stop answering")
    def answers_stop(self, request, queryset):
        self._answers(request, queryset, answering=False)

    @admin.action(description="Simulate: these clusters answer again")
    def answers_resume(self, request, queryset):
        self._answers(request, queryset, answering=True)

    def _answers(self, request, queryset, *, answering: bool) -> None:
        caller = Caller(user=request.user)
        for cluster in queryset:
            try:
                services.simulated_cluster_answers(
                    caller=caller, cluster=cluster, answering=answering
                )
            except DomainError as refused:
                self.message_user(request, refused.message, messages.ERROR)


@admin.register(GpuClass)
class GpuClassAdmin(SettingAdmin):
    list_display = ["name", "memory_gib", "products", "mig_profiles", "resource_name"]
    search_fields = ["name"]


@admin.register(NodePool)
class NodePoolAdmin(SettingAdmin):
    list_display = [
        "name",
        "cluster",
        "gpu_class",
        "purpose",
        "taint_key",
        "taint_effect",
        "topology_keys",
    ]
    list_filter = ["cluster", "purpose", "gpu_class"]
    search_fields = ["name"]


@admin.register(Node)
class NodeAdmin(ReadOnlyAdmin):
    """Nodes are what the cluster reports; operators cordon, uncordon and drain them."""

    list_display = [
        "name",
        "pool",
        "gpu_count",
        "mig_layout",
        "ready",
        "cordoned",
        "topology",
        "last_seen_at",
    ]
    list_filter = ["pool", "ready", "cordoned"]
    search_fields = ["name"]
    list_select_related = ["pool"]
    actions = ["cordon", "uncordon", "drain"]

    @admin.action(description="Cordon: place nothing new on them")
    def cordon(self, request, queryset):
        for node in queryset:
            services.node_cordon(caller=Caller(user=request.user), node=node)
        self.message_user(request, f"Cordoned {queryset.count()} node(s).", messages.SUCCESS)

    @admin.action(description="Uncordon")
    def uncordon(self, request, queryset):
        for node in queryset:
            services.node_cordon(caller=Caller(user=request.user), node=node, cordoned=False)
        self.message_user(request, f"Uncordoned {queryset.count()} node(s).", messages.SUCCESS)

    @admin.action(description="Drain: cordon and requeue their workloads")
    def drain(self, request, queryset):
        drained = sum(
            len(services.node_drain(caller=Caller(user=request.user), node=node))
            for node in queryset
        )
        self.message_user(request, f"Requeued {drained} workload(s).", messages.SUCCESS)


@admin.register(PriorityTier)
class PriorityTierAdmin(SettingAdmin):
    list_display = [
        "name",
        "value",
        "preemptible",
        "idle_warn_after",
        "idle_stop_after",
        "min_run_time",
        "notice_seconds",
        "max_evictions",
        "lost_work_credited",
    ]


@admin.register(QuotaGrant)
class QuotaGrantAdmin(admin.ModelAdmin):
    list_display = [
        "organization",
        "project",
        "gpu_class",
        "resource",
        "mig_profile",
        "guarantee",
        "limit",
        "region_limits",
        "cohort",
    ]
    list_filter = ["gpu_class", "cohort"]
    search_fields = ["organization__slug", "organization__name", "project__slug"]
    list_select_related = ["organization", "project", "gpu_class"]
    autocomplete_fields = ["organization"]

    def save_model(self, request, obj, form, change):
        services.quota_grant_save(caller=Caller(user=request.user), grant=obj)

    def delete_model(self, request, obj):
        services.quota_grant_delete(caller=Caller(user=request.user), grant=obj)

    def delete_queryset(self, request, queryset):
        for grant in queryset:
            services.quota_grant_delete(caller=Caller(user=request.user), grant=grant)


class ReadOnlyInline(admin.TabularInline):
    """Rows a workload's page shows as they are: written by services only."""

    extra = 0
    can_delete = False

    def get_readonly_fields(self, request, obj=None):
        return self.fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False


class PlacementInline(ReadOnlyInline):
    model = Placement
    fields = [
        "replica",
        "node",
        "gpu_indices",
        "gpu_milli",
        "mig_profile",
        "started_at",
        "ended_at",
    ]


class WorkloadEventInline(ReadOnlyInline):
    model = WorkloadEvent
    fields = ["at", "kind", "message"]


class EvictionInline(ReadOnlyInline):
    """Each eviction with the notice it gave and the work it lost (the preemption contract)."""

    model = Eviction
    fk_name = "workload"
    fields = [
        "at",
        "reason",
        "notice_seconds",
        "gpu_class",
        "mig_profile",
        "lost_since",
        "gpu_seconds_lost",
        "requeued",
    ]


class WorkloadLogTailInline(ReadOnlyInline):
    """What was kept of each replica's log when its objects were deleted (the lines: the logs
    endpoint and the console's log pane)."""

    model = WorkloadLogTail
    fields = ["replica", "lines_kept", "truncated", "captured_at", "failure"]

    @admin.display(description="lines kept")
    def lines_kept(self, tail: WorkloadLogTail) -> int:
        return len(tail.lines)


@admin.register(Workload)
class WorkloadAdmin(ReadOnlyAdmin):
    list_display = [
        "name",
        "project",
        "kind",
        "tier",
        "state",
        "gpus",
        "gpu_milli",
        "replicas",
        "gpu_class",
        "pending_code",
        "submitted_at",
    ]
    list_filter = ["state", "kind", "tier", "gpu_class"]
    search_fields = ["name", "project__slug", "project__organization__slug"]
    list_select_related = ["project__organization", "tier", "gpu_class"]
    inlines = [PlacementInline, WorkloadEventInline, EvictionInline, WorkloadLogTailInline]
    actions = ["requeue", "stop"]

    @admin.action(description="Requeue: stop and queue again")
    def requeue(self, request, queryset):
        caller = Caller(user=request.user)
        for workload in queryset.filter(state__in=Workload.ACTIVE_STATES):
            services.workload_requeue_by_operator(caller=caller, workload=workload)
        self.message_user(request, "Requeued.", messages.SUCCESS)

    @admin.action(description="Stop")
    def stop(self, request, queryset):
        caller = Caller(user=request.user)
        for workload in queryset.exclude(state__in=Workload.FINAL_STATES):
            services.workload_stop_by_operator(caller=caller, workload=workload)
        self.message_user(request, "Stopped.", messages.SUCCESS)


@admin.register(Eviction)
class EvictionAdmin(ReadOnlyAdmin):
    list_display = [
        "workload",
        "at",
        "reason",
        "notice_seconds",
        "gpu_class",
        "mig_profile",
        "gpu_seconds_lost",
        "requeued",
    ]
    list_filter = ["reason", "gpu_class", "requeued"]
    search_fields = ["workload__name", "workload__project__organization__slug"]
    list_select_related = ["workload__project__organization", "gpu_class"]


@admin.register(ProvisioningRecord)
class ProvisioningRecordAdmin(ReadOnlyAdmin):
    list_display = [
        "project",
        "cluster",
        "scope",
        "state",
        "attempts",
        "error",
        "updated_at",
        "provisioned_at",
    ]
    list_filter = ["cluster", "state", "scope"]
    list_select_related = ["project__organization", "cluster"]
    search_fields = ["project__namespace", "cluster__name"]
    actions = ["reprovision"]

    @admin.action(description="Run provisioning again (in each record's cluster)")
    def reprovision(self, request, queryset):
        queued = []
        for record in queryset.select_related("project__organization", "cluster"):
            services.provisioning_rerun(caller=caller_of(request), record=record)
            queued.append(f"{record.project or 'cluster-wide'} in {record.where}")
        self.message_user(request, f"Provisioning queued: {'; '.join(queued)}.", messages.SUCCESS)


@admin.register(SchedulerState)
class SchedulerStateAdmin(ReadOnlyAdmin):
    list_display = [
        "last_cycle_at",
        "last_cycle_ms",
        "last_admitted",
        "last_preempted",
        "last_pending",
    ]


@admin.register(SimulatedNodeState)
class SimulatedNodeStateAdmin(ReadOnlyAdmin):
    """Failure injection on the simulated cluster (demo and tests)."""

    list_display = ["name", "cluster", "failed"]
    list_filter = ["cluster"]
    actions = ["fail", "recover"]

    @admin.action(description="Fail these simulated nodes")
    def fail(self, request, queryset):
        caller = Caller(user=request.user)
        for state in queryset:
            backend = backend_named(state.cluster)
            services.simulated_node_fail(caller=caller, backend=backend, name=state.name)

    @admin.action(description="Recover these simulated nodes")
    def recover(self, request, queryset):
        caller = Caller(user=request.user)
        for state in queryset:
            backend = backend_named(state.cluster)
            services.simulated_node_fail(
                caller=caller, backend=backend, name=state.name, failed=False
            )


@admin.register(ReservationRule)
class ReservationRuleAdmin(SettingAdmin):
    list_display = ["organization", "max_gpus", "max_hours"]
    list_select_related = ["organization"]
    autocomplete_fields = ["organization"]


@admin.register(Reservation)
class ReservationAdmin(ApprovalAdmin):
    """Requested reservations first: they wait for an operator."""

    list_display = [
        "organization",
        "gpus",
        "gpu_class",
        "pool",
        "starts_at",
        "ends_at",
        "state",
        "short_gpus",
        "requested_by",
    ]
    list_filter = ["state", "pool", "gpu_class"]
    search_fields = ["organization__slug", "organization__name"]
    list_select_related = ["organization", "gpu_class", "pool", "requested_by"]
    waiting = Reservation.State.REQUESTED
    waiting_order = ("starts_at",)

    def approve_one(self, request, row, details) -> None:
        services.reservation_approve(caller=caller_of(request), reservation=row)

    def reject_one(self, request, row, reason) -> None:
        services.reservation_reject(caller=caller_of(request), reservation=row, reason=reason)


class QuotaApprovalForm(forms.Form):
    amount = forms.IntegerField(min_value=1, required=False, help_text="Empty: what was asked for.")
    until = forms.DateTimeField(required=False, help_text="UTC. Empty: what was asked for.")


@admin.register(QuotaRequest)
class QuotaRequestAdmin(ApprovalAdmin):
    """Requested quota increases first: they wait for an operator, who may grant another
    amount or end than asked."""

    list_display = [
        "organization",
        "project",
        "gpu_class",
        "resource",
        "mig_profile",
        "amount",
        "until",
        "state",
        "requested_by",
        "requested_at",
    ]
    list_filter = ["state", "gpu_class", "resource"]
    search_fields = ["organization__slug", "organization__name", "reason"]
    list_select_related = ["organization", "project", "gpu_class", "requested_by"]
    waiting = QuotaRequest.State.REQUESTED
    waiting_order = ("-requested_at",)
    approval_form = QuotaApprovalForm

    def approve_one(self, request, row, details) -> None:
        services.quota_request_approve(
            caller=caller_of(request),
            quota_request=row,
            amount=details["amount"],
            until=details["until"],
        )

    def reject_one(self, request, row, reason) -> None:
        services.quota_request_reject(caller=caller_of(request), quota_request=row, reason=reason)
