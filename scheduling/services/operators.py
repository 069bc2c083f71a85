"""What operators do to the running cluster: stop or requeue a workload, cordon and drain nodes."""

from django.core.exceptions import ValidationError
from django.db import transaction

from tenants.permissions import (
    Caller,
    require_operator,
)

from ..models import (
    Node,
    Workload,
)
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
    require_operator(caller)
    Node.objects.filter(pk=node.pk).update(cordoned=cordoned)
    node.refresh_from_db()
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
