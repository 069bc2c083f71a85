"""Scheduling's part of /metrics. What the cycle and provisioning count as they run (process
metrics, merged across processes in multi-process mode), and what the database says at scrape
time (`scheduling_metrics`, registered in SchedulingConfig.ready()), read through the
selectors."""

from prometheus_client import Counter, Histogram
from prometheus_client.core import GaugeMetricFamily

from portal import clock

from . import selectors

CYCLE_DURATION = Histogram(
    "portal_scheduling_cycle_duration_seconds",
    "Wall time of a scheduling cycle that ran (snapshot, engine, writes).",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
DECISIONS = Counter(
    "portal_scheduling_decisions",
    "Decisions of scheduling cycles, by kind: admitted (a workload placed), preempted (a "
    "workload evicted).",
    ["kind"],
)
ADMISSION_WAIT = Histogram(
    "portal_admission_wait_seconds",
    "From submission to admission, observed as each workload is admitted.",
    ["gpu_class"],
    buckets=(1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400),
)
PROVISIONING_FAILURES = Counter(
    "portal_provisioning_failures",
    "Failed provisioning, by scope (project or cluster), cluster (empty: the settings' "
    "backend) and outcome: an attempt failed with a retryable or a permanent error, or the "
    "retries ran out (gave_up).",
    ["scope", "cluster", "outcome"],
)

DECISION_ADMITTED = "admitted"
DECISION_PREEMPTED = "preempted"


def cycle_observe(*, seconds: float, admitted: list[tuple[str, float]], preempted: int) -> None:
    """A cycle that ran: its duration, its decisions, and the wait of each workload it
    admitted as (GPU class, seconds since submission)."""
    CYCLE_DURATION.observe(seconds)
    DECISIONS.labels(kind=DECISION_ADMITTED).inc(len(admitted))
    DECISIONS.labels(kind=DECISION_PREEMPTED).inc(preempted)
    for gpu_class, wait in admitted:
        ADMISSION_WAIT.labels(gpu_class=gpu_class).observe(max(wait, 0.0))


def _gauge(name: str, documentation: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, labels=labels)


def scheduling_metrics():
    """The queue, the GPUs of each pool and class, reservations, notebooks and the cycle's
    heartbeat, as the database has them now."""
    now = clock.now()
    pending = _gauge(
        "portal_workloads_pending",
        "Waiting workloads by organization, first acceptable GPU class and reason (the "
        "engine's pending code; new: not yet looked at by a cycle).",
        ["organization", "gpu_class", "reason"],
    )
    oldest = _gauge(
        "portal_workloads_pending_oldest_wait_seconds",
        "How long the longest-waiting workload of each GPU class has waited since submission.",
        ["gpu_class"],
    )
    oldest_by_class = {}
    for group in selectors.pending_workload_counts():
        pending.add_metric([group.organization, group.gpu_class, group.reason], group.count)
        seen = oldest_by_class.get(group.gpu_class)
        if seen is None or group.oldest_submitted_at < seen:
            oldest_by_class[group.gpu_class] = group.oldest_submitted_at
    for gpu_class, submitted_at in sorted(oldest_by_class.items()):
        oldest.add_metric([gpu_class], max((now - submitted_at).total_seconds(), 0.0))

    by_pool = ["pool", "gpu_class"]
    # The inventory's gauges name the cluster too (a pool is one cluster's).
    inventory = ["cluster", *by_pool]
    total = _gauge("portal_gpus_total", "GPUs of the pool's ready nodes.", inventory)
    allocated = _gauge(
        "portal_gpus_allocated", "GPUs of ready nodes that work holds, whole or in part.", inventory
    )
    free = _gauge("portal_gpus_free", "GPUs of ready nodes that nothing holds.", inventory)
    slots = _gauge(
        "portal_schedulable_slots",
        "How many requests of request_gpus GPUs on one node would fit now, each size counted "
        "on its own (free against schedulable: the pool's fragmentation).",
        [*inventory, "request_gpus"],
    )
    up = _gauge(
        "portal_cluster_up",
        "1 while the cluster answers, 0 once it is unreachable.",
        ["cluster", "region"],
    )
    for cluster in selectors.cluster_states():
        up.add_metric([cluster.name, cluster.region], int(cluster.state == "ready"))
    for pool in selectors.cluster_capacity():
        labels = [pool.cluster, pool.pool, pool.gpu_class]
        total.add_metric(labels, pool.gpus_total)
        allocated.add_metric(labels, pool.gpus_total - pool.gpus_idle)
        free.add_metric(labels, pool.gpus_idle)
        for size, fits in sorted(pool.schedulable.items()):
            slots.add_metric([*labels, str(size)], fits)

    borrowed = _gauge(
        "portal_gpus_borrowed",
        "GPUs held by work running on borrowed quota (above its organization's guarantee).",
        by_pool,
    )
    for (pool, gpu_class), gpus in sorted(selectors.gpus_borrowed_by_pool().items()):
        borrowed.add_metric([pool, gpu_class], gpus)

    reserved = _gauge(
        "portal_gpus_reserved", "GPUs of reservations whose window is open now.", by_pool
    )
    reserved_in_use = _gauge(
        "portal_gpus_reserved_in_use",
        "Of the reserved GPUs, those the holders' own work uses.",
        by_pool,
    )
    per_pool: dict[tuple[str, str], list[float]] = {}
    for use in selectors.reservations_in_use(now=now):
        held = use.reservation
        if held.mig_profile:  # instances are not GPUs: kept out of these GPU counts
            continue
        sums = per_pool.setdefault((held.pool.name, held.gpu_class.name), [0, 0])
        sums[0] += held.held_gpus
        sums[1] += use.in_use
    for (pool, gpu_class), (gpus, in_use) in sorted(per_pool.items()):
        reserved.add_metric([pool, gpu_class], gpus)
        reserved_in_use.add_metric([pool, gpu_class], in_use)

    notebooks = _gauge("portal_notebooks_running", "Running notebooks.", ["organization"])
    idle = _gauge(
        "portal_notebooks_idle",
        "Running notebooks whose GPUs are idle (below the idle threshold since idle_since).",
        ["organization"],
    )
    for organization, running, idle_count in selectors.notebooks_running():
        notebooks.add_metric([organization], running)
        idle.add_metric([organization], idle_count)

    heartbeat = _gauge(
        "portal_scheduling_last_cycle_timestamp_seconds",
        "When the scheduling cycle last ran (Unix time; absent: never).",
        [],
    )
    if (last := selectors.last_cycle_at()) is not None:
        heartbeat.add_metric([], last.timestamp())

    projects = _gauge(
        "portal_project_info",
        "1 per live project: its Kubernetes namespace, organization and project (joins "
        "namespace-labelled GPU metrics, such as DCGM's, to tenants).",
        ["namespace", "organization", "project"],
    )
    for namespace, organization, project in selectors.project_namespaces():
        projects.add_metric([namespace, organization, project], 1)

    provisioning = _gauge(
        "portal_provisioning_records",
        "Provisioning records by cluster (empty: the settings' backend), scope (project or "
        "cluster) and state: a cluster lacking a project's namespace shows as failed or "
        "pending there.",
        ["cluster", "scope", "state"],
    )
    for cluster, scope, state, count in selectors.provisioning_counts():
        provisioning.add_metric([cluster, scope, state], count)

    return [
        pending,
        oldest,
        total,
        allocated,
        free,
        slots,
        up,
        borrowed,
        reserved,
        reserved_in_use,
        notebooks,
        idle,
        heartbeat,
        projects,
        provisioning,
    ]
