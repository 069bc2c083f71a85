"""The clusters' inventory: GPU classes, clusters, pools and tiers from the description file;
nodes as each cluster's backend reports them, and the gangs of lost nodes requeued."""

from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction

from portal import clock

from ..cluster import ClusterBackend, ClusterError
from ..cluster.description import DEFAULT_CLUSTER, cluster_description_load
from ..cluster.manifests import (
    POOL_LABEL,
)
from ..cluster.specs import NodeInventory
from ..models import (
    Cluster,
    GpuClass,
    Node,
    NodeAvailability,
    NodePool,
    Placement,
    PriorityTier,
    Workload,
)
from .clusters import cluster_answered, cluster_unanswered, workloads_in
from .lifecycle import workload_requeue


@transaction.atomic
def cluster_description_apply(*, path: Path) -> None:
    """GPU classes, the simulated clusters with their pools, and tiers from a cluster
    description file; idempotent."""
    description = cluster_description_load(path)
    # The settings' file is named by the settings, so that the rows outlive a moved checkout.
    simulated_path = "" if Path(path) == Path(settings.PORTAL_SIMULATED_CLUSTER) else str(path)
    for item in description.gpu_classes:
        GpuClass.objects.update_or_create(
            name=item["name"],
            defaults={
                "memory_gib": item["memory_gib"],
                "products": item.get("products", []),
                "mig_profiles": item.get("mig_profiles", []),
            },
        )
    for section in description.clusters:
        cluster, _ = Cluster.objects.update_or_create(
            name=section.name,
            defaults={
                "region": section.region,
                "backend": Cluster.Backend.SIMULATED,
                "simulated_path": simulated_path,
            },
        )
        for item in section.pools:
            _pool_apply(item, cluster=cluster)
    _migrated_default_retire(keep={section.name for section in description.clusters})
    for item in description.tiers:
        minutes = {k: item.get(f"{k}_minutes") for k in ("idle_warn_after", "idle_stop_after")}
        PriorityTier.objects.update_or_create(
            name=item["name"],
            defaults={
                "value": item["value"],
                "preemptible": item["preemptible"],
                # Unsaid, a tier that cannot be preempted credits lost work (a reclaim may
                # still evict it), a preemptible (spot-like) one does not.
                "lost_work_credited": item.get("lost_work_credited", not item["preemptible"]),
                "description": item.get("description", ""),
                **{k: timedelta(minutes=v) if v else None for k, v in minutes.items()},
            },
        )


def _migrated_default_retire(*, keep: set[str]) -> None:
    """The `default` cluster migration 0029 made of a deployment's pools, once the description's
    clusters took every pool from it (a demo database seeded before there were clusters): it
    would stay on every page and in every per-cluster pass with nothing in it."""
    if DEFAULT_CLUSTER in keep:
        return
    Cluster.objects.filter(name=DEFAULT_CLUSTER, pools__isnull=True).delete()


def _pool_apply(item: dict, *, cluster: Cluster) -> None:
    gpu_class = GpuClass.objects.get(name=item["gpu_class"]) if item.get("gpu_class") else None
    NodePool.objects.update_or_create(
        name=item["name"],
        defaults={
            "cluster": cluster,
            "gpu_class": gpu_class,
            "purpose": item["purpose"],
            "topology_keys": item.get("topology_keys", []),
            "labels": item.get("labels", {}),
            **_pool_taint(item, gpu_class=gpu_class),
        },
    )


def _pool_taint(item: dict, *, gpu_class: GpuClass | None) -> dict:
    """The taint of a described pool: its `taint` (null: none); by default the GPU taint for a
    GPU pool, so that only GPU work lands there, and none for a CPU pool."""
    if "taint" not in item and gpu_class is not None:
        return {}  # the model's default, nvidia.com/gpu=present:NoSchedule
    taint = item.get("taint") or {}
    return {
        "taint_key": taint.get("key", ""),
        "taint_value": taint.get("value", ""),
        "taint_effect": taint.get("effect", "NoSchedule"),
    }


def _pool_of(inventory: NodeInventory, pools: list[NodePool]) -> NodePool | None:
    """The pool a node belongs to: named by its pool label, or the pool whose labels it
    carries, or the only pool of its GPU product."""
    named = inventory.labels.get(POOL_LABEL)
    for pool in pools:
        if pool.name == named:
            return pool
    product = inventory.labels.get("nvidia.com/gpu.product")
    for pool in pools:
        if pool.labels and all(inventory.labels.get(k) == v for k, v in pool.labels.items()):
            return pool
    by_product = [p for p in pools if p.gpu_class and product in p.gpu_class.products]
    return by_product[0] if len(by_product) == 1 else None


def _quantity_milli(value: str) -> int:
    """A Kubernetes CPU quantity ("48", "500m") in milli-cores."""
    return int(value[:-1]) if value.endswith("m") else int(float(value) * 1000)


def _quantity_mib(value: str) -> int:
    units = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "Ti": 1024 * 1024}
    for suffix, factor in units.items():
        if value.endswith(suffix):
            return int(float(value[: -len(suffix)]) * factor)
    return int(value) // (1024 * 1024)


def inventory_sync(*, backend: ClusterBackend, cluster: Cluster | None = None) -> list[str]:
    """Bring the Node table to what the cluster reports (the nodes of the cluster's pools;
    None: of every pool, for the settings' one backend); requeue the gangs of lost nodes.
    Returns the names of the lost nodes that still held workloads."""
    reported = backend.list_nodes()
    pools = NodePool.objects.select_related("gpu_class")
    nodes = Node.objects.all()
    if cluster is not None:
        pools, nodes = pools.filter(cluster=cluster), nodes.filter(pool__cluster=cluster)
    pools = list(pools)
    now = clock.now()
    seen: set[str] = set()
    with transaction.atomic():
        for inventory in reported:
            pool = _pool_of(inventory, pools)
            if pool is None:
                continue
            seen.add(inventory.name)
            mig = {
                key.removeprefix("nvidia.com/"): int(count)
                for key, count in inventory.allocatable.items()
                if key.startswith("nvidia.com/mig-")
            }
            Node.objects.update_or_create(
                name=inventory.name,
                defaults={
                    "pool": pool,
                    "gpu_count": int(inventory.allocatable.get(pool.gpu_class.resource_name, 0))
                    if pool.gpu_class
                    else 0,
                    "mig_layout": mig,
                    "cpu_milli": _quantity_milli(inventory.allocatable.get("cpu", "0")),
                    "memory_mib": _quantity_mib(inventory.allocatable.get("memory", "0")),
                    "topology": {
                        key: inventory.labels[key]
                        for key in pool.topology_keys
                        if key in inventory.labels
                    },
                    "labels": dict(inventory.labels),
                    "ready": inventory.ready,
                    "last_seen_at": now,
                },
            )
        nodes.exclude(name__in=seen).update(ready=False)
        node_availability_record(now=now, nodes=nodes)
    lost = sorted(
        set(
            Placement.objects.filter(
                ended_at__isnull=True, node__ready=False, node__in=nodes
            ).values_list("node__name", flat=True)
        )
    )
    for workload in workloads_in(
        Workload.objects.filter(
            state__in=Workload.ACTIVE_STATES,
            placements__ended_at__isnull=True,
            placements__node__name__in=lost,
        ).distinct(),
        cluster,
        active=True,
    ):
        on_lost = sorted(
            workload.placements.filter(ended_at__isnull=True, node__name__in=lost).values_list(
                "node__name", flat=True
            )
        )
        workload_requeue(
            workload_id=workload.pk,
            reason=f"Node {', '.join(on_lost)} is no longer ready. The gang was requeued.",
            backend=backend,
        )
    return lost


def cluster_inventory_sync(*, cluster: Cluster, backend: ClusterBackend) -> list[str] | None:
    """The cluster's inventory synced (`inventory_sync`), and whether it answered recorded
    (`cluster_answered`, `cluster_unanswered`): a cluster that does not answer is left to the
    next pass, and to the unreachable rule. None when it did not answer."""
    try:
        lost = inventory_sync(backend=backend, cluster=cluster)
    except ClusterError as error:
        cluster_unanswered(cluster=cluster, error=error)
        return None
    cluster_answered(cluster=cluster)
    return lost


def node_availability_record(*, now: datetime, nodes=None) -> int:
    """Close the open availability span of each node (of ``nodes``; None: every node) whose
    state, pool or inventory changed, and open its new one at ``now``; the spans opened. Call
    it inside the transaction that changed the nodes."""
    nodes = Node.objects.all() if nodes is None else nodes
    open_spans = {
        span.node_id: span
        for span in NodeAvailability.objects.filter(ends_at__isnull=True, node__in=nodes)
    }
    opened = []
    for node in nodes:
        state = NodeAvailability.state_of(node)
        span = open_spans.get(node.pk)
        now_is = (node.pool_id, state, node.gpu_count, node.mig_layout)
        if span is not None:
            if (span.pool_id, span.state, span.gpu_count, span.mig_layout) == now_is:
                continue
            if span.starts_at < now:
                NodeAvailability.objects.filter(pk=span.pk).update(ends_at=now)
            else:  # changed again within the same instant: the newer state holds it
                span.delete()
        opened.append(
            NodeAvailability(
                node=node,
                pool_id=node.pool_id,
                state=state,
                gpu_count=node.gpu_count,
                mig_layout=node.mig_layout,
                starts_at=now,
            )
        )
    NodeAvailability.objects.bulk_create(opened)
    return len(opened)
