"""What operators do to the running cluster: stop or requeue a workload, cordon and drain nodes;
and the cluster's settings they change in admin (GPU classes, pools, tiers, reservation rules).
Each is audited."""

from datetime import timedelta
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import models, transaction

from portal import clock
from portal.errors import Conflict
from tenants.permissions import (
    Caller,
    require_operator,
)
from tenants.services import audit_record

from ..models import (
    Cluster,
    Node,
    SimulatedClusterState,
    SimulatedNodeState,
    Workload,
)
from .inventory import node_availability_record
from .lifecycle import workload_end, workload_requeue


def workload_stop_by_operator(*, caller: Caller, workload: Workload) -> Workload:
    require_operator(caller)
    return workload_end(
        workload_id=workload.pk,
        state=Workload.State.CANCELLED,
        reason=f"Stopped by operator {caller.user.email}.",
        caller=caller,
    )


def workload_requeue_by_operator(*, caller: Caller, workload: Workload) -> Workload:
    require_operator(caller)
    requeued = workload_requeue(
        workload_id=workload.pk, reason=f"Requeued by operator {caller.user.email}.", caller=caller
    )
    workload.refresh_from_db()
    if requeued is None:
        raise ValidationError(
            {"state": f"Only admitted or running workloads requeue, not {workload.state}."}
        )
    return workload


@transaction.atomic
def node_cordon(*, caller: Caller, node: Node, cordoned: bool = True) -> Node:
    """Place nothing new on the node (or again, ``cordoned=False``); audited when it changes."""
    require_operator(caller)
    with transaction.atomic():
        changed = (
            Node.objects.filter(pk=node.pk).exclude(cordoned=cordoned).update(cordoned=cordoned)
        )
        node.refresh_from_db()
        if changed:
            node_availability_record(now=clock.now(), nodes=[node])
            audit_record(
                caller=caller,
                organization=None,
                action="node.cordon" if cordoned else "node.uncordon",
                target=node,
                payload={"pool": node.pool.name if node.pool_id else None},
            )
    return node


def node_drain(*, caller: Caller, node: Node) -> list[Workload]:
    """Cordon the node and requeue every workload with a replica on it."""
    node_cordon(caller=caller, node=node)
    drained = list(
        Workload.objects.filter(
            state__in=Workload.ACTIVE_STATES,
            placements__node=node,
            placements__ended_at__isnull=True,
        ).distinct()
    )
    for workload in drained:
        workload_requeue_by_operator(caller=caller, workload=workload)
    return drained


def simulated_node_fail(*, caller: Caller, backend, name: str, failed: bool = True) -> None:
    """Fail a node of the simulated cluster (or recover it, ``failed=False``): failure
    injection for the demo and tests, audited like any operator's change to the inventory."""
    require_operator(caller)
    with transaction.atomic():
        if failed:
            backend.node_fail(name=name)
        else:
            backend.node_recover(name=name)
        state = SimulatedNodeState.objects.filter(name=name).first()
        if state is not None:
            audit_record(
                caller=caller,
                organization=None,
                action="node.simulated_fail" if failed else "node.simulated_recover",
                target=state,
            )


def simulated_cluster_answers(*, caller: Caller, cluster: Cluster, answering: bool) -> None:
    """Switch a simulated cluster's answers off (or on again, ``answering=True``): every call
    to it fails as to a cluster that stopped answering, so the demo shows it marked unreachable
    once the grace has passed, and followed again when it answers. Audited."""
    require_operator(caller)
    if cluster.backend != Cluster.Backend.SIMULATED:
        raise Conflict(f"Cluster {cluster.name} is not simulated: its answers are its own.")
    with transaction.atomic():
        SimulatedClusterState.objects.update_or_create(
            cluster=cluster.name, defaults={"answering": answering}
        )
        audit_record(
            caller=caller,
            organization=None,
            action="cluster.simulated_answering" if answering else "cluster.simulated_silent",
            target=cluster,
        )


def _plain(value):
    """A field's value as an audit payload (JSON) keeps it."""
    if isinstance(value, models.Model):
        return str(value)
    if isinstance(value, Decimal | timedelta):
        return str(value)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def setting_save(*, caller: Caller, setting: models.Model, changed: list[str]) -> models.Model:
    """An operator adds or changes a cluster setting (a GPU class, pool or priority tier) or an
    organization's reservation rule in admin: validated, saved and audited with the fields
    ``changed`` (their new values)."""
    require_operator(caller)
    setting.full_clean()
    created = setting._state.adding
    with transaction.atomic():
        setting.save()
        audit_record(
            caller=caller,
            organization=getattr(setting, "organization", None),
            action=f"{setting._meta.model_name}.{'create' if created else 'update'}",
            target=setting,
            payload={field: _plain(getattr(setting, field)) for field in changed},
        )
    return setting


def setting_delete(*, caller: Caller, setting: models.Model) -> None:
    """An operator deletes a cluster setting or a reservation rule in admin, audited."""
    require_operator(caller)
    with transaction.atomic():
        audit_record(
            caller=caller,
            organization=getattr(setting, "organization", None),
            action=f"{setting._meta.model_name}.delete",
            target=setting,
        )
        setting.delete()
