"""Every read of scheduling, one module per concern; the public names are importable from here
(``from scheduling import selectors; selectors.workload_list(...)``). A read that serves a
caller is scoped to the caller's organizations like every tenant read; an operator's read
requires an operator.

- workloads: a project's workloads and their timeline; the placements billing meters and
  the evictions it credits
- quotas: grants with what is in use of them, quota requests, grants to come
- catalog: GPU classes, priority tiers, GPU pools and their capacity
- reservations: an organization's reservations, the pools' timelines, a pool's load over a
  window with its shortfalls and the nearest windows that fit
- capacity: the capacity calendar of the next days and the windows where a block of GPUs fits
- operators: operators' reads across tenants for the operator API (pools, nodes, grants,
  reservations and quota requests)
- cluster: operators' view of the cluster node by node, the queue across tenants, the GPU
  work the insights judge
- metrics: operators' figures for /metrics
- estimates: the run times start estimates draw from, and how well the estimates held
- logs: a workload's container logs, from the cluster
- fairness: each organization's standing in fair share (decayed usage, share, order)
- prices: what use would cost at the catalog's prices (asked of billing through an extension
  point)
"""

from .capacity import (
    CALENDAR_HOURS,
    LEVELS,
    BlockAsk,
    CapacityCalendar,
    ProposedWindow,
    block_windows,
    capacity_ahead,
)
from .catalog import (
    class_capacities,
    gpu_class_list,
    node_availability,
    pool_capacity,
    pool_capacity_named,
    pool_list,
    pool_of_class_exists,
    pool_resources,
    tier_list,
)
from .cluster import (
    NEEDS_GPU,
    GpuCell,
    MigUse,
    PoolOverview,
    cluster_named,
    cluster_names,
    cluster_overview,
    cluster_states,
    gpu_workloads_seen,
    gpu_workloads_waiting,
    queue_across_tenants,
    region_list,
    terminating_placements,
    workload_clusters,
)
from .estimates import ClassCalibration, estimate_calibration, interval_scale, runtime_samples
from .fairness import (
    Standing,
    fair_share_standing,
    fair_share_standings,
    past_usage,
    usage_decay,
)
from .logs import TAIL_MAX, KeptTail, WorkloadLogs, log_text, workload_logs
from .metrics import (
    PendingCount,
    ReservationUse,
    cluster_capacity,
    gpus_borrowed_by_pool,
    last_cycle_at,
    notebooks_running,
    pending_workload_counts,
    project_namespaces,
    reservations_in_use,
)
from .operators import (
    gpu_class_for_operator,
    node_for_operator,
    nodes_for_operator,
    pools_for_operator,
    quota_grants_for_operator,
    quota_requests_for_operator,
    reservations_for_operator,
    tier_for_operator,
)
from .prices import UsagePrices, usage_prices
from .provisioning import (
    cluster_organizations,
    organization_clusters,
    organization_may_use,
    project_provisioning,
    provisioning_counts,
)
from .quotas import (
    QuotaUse,
    quota_class_most_granted,
    quota_grant_history,
    quota_grants_to_come,
    quota_list,
    quota_overview,
    quota_request_for_operator,
    quota_request_get,
    quota_request_list,
    quota_usage,
)
from .reservations import (
    SEARCH_SPAN,
    FreeDay,
    PoolTimeline,
    ReservedBlock,
    Shortfall,
    calendar_days,
    nearest_windows,
    pool_load,
    reservation_for_operator,
    reservation_get,
    reservation_list,
    reservation_timeline,
    reservations_ahead,
    reservations_on_record,
    shortfalls,
)
from .workloads import (
    WorkloadClock,
    evictions_since,
    organization_workloads,
    placements_ended,
    placements_ran,
    workload_cancel_permitted,
    workload_clock,
    workload_events,
    workload_get,
    workload_list,
    workloads_as_shown,
)

__all__ = [
    "CALENDAR_HOURS",
    "LEVELS",
    "NEEDS_GPU",
    "SEARCH_SPAN",
    "TAIL_MAX",
    "BlockAsk",
    "CapacityCalendar",
    "ClassCalibration",
    "FreeDay",
    "GpuCell",
    "KeptTail",
    "MigUse",
    "PendingCount",
    "PoolOverview",
    "PoolTimeline",
    "ProposedWindow",
    "QuotaUse",
    "ReservationUse",
    "ReservedBlock",
    "Shortfall",
    "Standing",
    "UsagePrices",
    "WorkloadClock",
    "WorkloadLogs",
    "block_windows",
    "calendar_days",
    "capacity_ahead",
    "class_capacities",
    "cluster_capacity",
    "cluster_named",
    "cluster_names",
    "cluster_organizations",
    "cluster_overview",
    "cluster_states",
    "estimate_calibration",
    "evictions_since",
    "fair_share_standing",
    "fair_share_standings",
    "gpu_class_for_operator",
    "gpu_class_list",
    "gpu_workloads_seen",
    "gpu_workloads_waiting",
    "gpus_borrowed_by_pool",
    "interval_scale",
    "last_cycle_at",
    "log_text",
    "nearest_windows",
    "node_availability",
    "node_for_operator",
    "nodes_for_operator",
    "notebooks_running",
    "organization_clusters",
    "organization_may_use",
    "organization_workloads",
    "past_usage",
    "pending_workload_counts",
    "placements_ended",
    "placements_ran",
    "pool_capacity",
    "pool_capacity_named",
    "pool_list",
    "pool_load",
    "pool_of_class_exists",
    "pool_resources",
    "pools_for_operator",
    "project_namespaces",
    "project_provisioning",
    "provisioning_counts",
    "queue_across_tenants",
    "quota_class_most_granted",
    "quota_grant_history",
    "quota_grants_for_operator",
    "quota_grants_to_come",
    "quota_list",
    "quota_overview",
    "quota_request_for_operator",
    "quota_request_get",
    "quota_request_list",
    "quota_requests_for_operator",
    "quota_usage",
    "region_list",
    "reservation_for_operator",
    "reservation_get",
    "reservation_list",
    "reservation_timeline",
    "reservations_ahead",
    "reservations_for_operator",
    "reservations_in_use",
    "reservations_on_record",
    "runtime_samples",
    "shortfalls",
    "terminating_placements",
    "tier_for_operator",
    "tier_list",
    "usage_decay",
    "usage_prices",
    "workload_cancel_permitted",
    "workload_clock",
    "workload_clusters",
    "workload_events",
    "workload_get",
    "workload_list",
    "workload_logs",
    "workloads_as_shown",
]
