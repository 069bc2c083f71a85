"""Every write of scheduling, one module per concern; the public names are importable from here.

- inventory: the cluster description file and the node inventory
- provisioning: what the cluster and each project's namespace must hold
- quotas: operators' quota grants
- reservations: a tenant's reservation request, checked against the pools under their locks;
  operators' decisions; a reservation's mail
- reservation_upkeep: reservations moved on with time and re-checked against the pools
- submission: a user's request, validated and queued
- cycle: the scheduling cycle, the only bridge between the ORM and the engine
- lifecycle: launch, status, idle and runtime rules; the one way to end a workload
  (`workload_end`) and the one way to requeue it (`workload_requeue`)
- operators: what operators do to running work and nodes
- reconciler: finishing the work of lost tasks
- timeline: the workload's events as its users read them
- what_if: what the scheduler would do with a submission, writing nothing (what_if_state:
  the state each cycle keeps for it)
- alternatives: what would unblock a pending workload, tried on the what-if's state on demand
- evictions: the preemption contract's record of each eviction, and reported checkpoints
"""

from .alternatives import QuotaPrefill, ShownAlternative
from .clusters import cluster_answered, cluster_unanswered
from .cycle import CycleResult, scheduling_cycle_run
from .cycle_state import scheduling_cycle_request
from .evictions import evictions_record, workload_checkpoint_report
from .following import idle_and_runtime_check, workloads_sync
from .inventory import (
    cluster_description_apply,
    cluster_inventory_sync,
    inventory_sync,
    node_availability_record,
)
from .lifecycle import (
    workload_cancel,
    workload_end,
    workload_launch,
    workload_objects_delete,
    workload_objects_delete_give_up,
    workload_requeue,
    workloads_launch,
    workloads_launch_give_up,
)
from .operators import (
    node_cordon,
    node_drain,
    setting_delete,
    setting_save,
    simulated_cluster_answers,
    simulated_node_fail,
    workload_requeue_by_operator,
    workload_stop_by_operator,
)
from .provisioning import (
    cluster_manifests,
    cluster_provision,
    cluster_provisioning_give_up,
    project_deprovision,
    project_provision,
    provisioning_give_up,
    provisioning_rerun,
)
from .quota_history import quota_grant_history_record
from .quotas import (
    GrantKey,
    QuotaAsk,
    quota_grant_delete,
    quota_grant_for_period,
    quota_grant_remove,
    quota_grant_save,
    quota_grant_set,
    quota_increases_apply,
    quota_request_approve,
    quota_request_create,
    quota_request_email_send,
    quota_request_reject,
    quota_requests_advance,
)
from .reconciler import Reconciled, cluster_reconcile
from .reservation_upkeep import reservations_advance, reservations_recheck
from .reservations import (
    ReservationRequest,
    reservation_approve,
    reservation_cancel,
    reservation_email_send,
    reservation_reject,
    reservations_request,
)
from .submission import (
    BATCH_MAX,
    WorkloadRequest,
    request_bounds,
    request_default,
    workload_submit,
    workloads_submit,
)
from .what_if import (
    WHAT_IF_BATCH_MAX,
    WhatIfReport,
    WorkloadWhatIf,
    workload_alternatives,
    workloads_what_if,
)

__all__ = [
    "BATCH_MAX",
    "WHAT_IF_BATCH_MAX",
    "CycleResult",
    "GrantKey",
    "QuotaAsk",
    "QuotaPrefill",
    "Reconciled",
    "ReservationRequest",
    "ShownAlternative",
    "WhatIfReport",
    "WorkloadRequest",
    "WorkloadWhatIf",
    "cluster_answered",
    "cluster_description_apply",
    "cluster_inventory_sync",
    "cluster_manifests",
    "cluster_provision",
    "cluster_provisioning_give_up",
    "cluster_reconcile",
    "cluster_unanswered",
    "evictions_record",
    "idle_and_runtime_check",
    "inventory_sync",
    "node_availability_record",
    "node_cordon",
    "node_drain",
    "project_deprovision",
    "project_provision",
    "provisioning_give_up",
    "provisioning_rerun",
    "quota_grant_delete",
    "quota_grant_for_period",
    "quota_grant_history_record",
    "quota_grant_remove",
    "quota_grant_save",
    "quota_grant_set",
    "quota_increases_apply",
    "quota_request_approve",
    "quota_request_create",
    "quota_request_email_send",
    "quota_request_reject",
    "quota_requests_advance",
    "request_bounds",
    "request_default",
    "reservation_approve",
    "reservation_cancel",
    "reservation_email_send",
    "reservation_reject",
    "reservations_advance",
    "reservations_recheck",
    "reservations_request",
    "scheduling_cycle_request",
    "scheduling_cycle_run",
    "setting_delete",
    "setting_save",
    "simulated_cluster_answers",
    "simulated_node_fail",
    "workload_alternatives",
    "workload_cancel",
    "workload_checkpoint_report",
    "workload_end",
    "workload_launch",
    "workload_objects_delete",
    "workload_objects_delete_give_up",
    "workload_requeue",
    "workload_requeue_by_operator",
    "workload_stop_by_operator",
    "workload_submit",
    "workloads_launch",
    "workloads_launch_give_up",
    "workloads_submit",
    "workloads_sync",
    "workloads_what_if",
]
