"""The one channel for side effects between and within apps.

An app's service publishes what happened; an app that must react subscribes to it in its
`ready()`. Subscribers run after the publishing transaction commits (never for a rolled-back
write) and only queue Celery tasks: the rules live in the subscriber's services. Facts that must
never be lost (GPU-seconds) are read from their source rows, not carried by events.

Extension points work the other way round: an app that decides something (accepting a
submission) runs the checks other apps registered for it, inside its transaction, and a check
refuses by raising a domain error or a ValidationError.
"""

from collections import defaultdict
from collections.abc import Callable
from enum import StrEnum
from functools import partial

from django.db import transaction


class Event(StrEnum):
    # tenants: a project (= a namespace) was created or deleted; payload project_id.
    PROJECT_CREATED = "project_created"
    PROJECT_DELETED = "project_deleted"
    # tenants: an invitation awaits its e-mail; payload invitation_id.
    INVITATION_CREATED = "invitation_created"
    # scheduling: what a project's namespace carries changed (its organization's quotas);
    # payload project_id, and cluster (a name) when only that cluster's is to be ensured again
    # (an operator's rerun). PROJECT_DELETED may name a cluster so too.
    PROJECT_CHANGED = "project_changed"
    # scheduling: what the clusters must hold for the portal (priority classes, node labels
    # and taints) is to be ensured again (an operator asked); payload cluster (a name; none:
    # every cluster).
    CLUSTER_CHANGED = "cluster_changed"
    # scheduling: submitted workloads (one, or a batch) wait for a scheduling cycle; payload
    # workload_ids.
    WORKLOADS_SUBMITTED = "workloads_submitted"
    # scheduling: a cycle admitted workloads onto nodes; payload workload_ids.
    WORKLOADS_ADMITTED = "workloads_admitted"
    # scheduling: an admitted workload stopped holding GPUs (ended, preempted or requeued) and
    # its cluster objects must go; payload workload_id.
    WORKLOAD_RELEASED = "workload_released"
    # scheduling: a reservation was requested or changed state, or its shortfall changed;
    # payload reservation_id, change (the state it reached, or short/covered/ordered) and
    # occurrence (tells one shortfall change from the next), and short_gpus for a shortfall
    # change. Its mail is keyed by them.
    RESERVATION_CHANGED = "reservation_changed"
    # scheduling: a quota request was made or changed state; payload quota_request_id and
    # change (the state it reached, or package_granted/package_ended for an order's package).
    QUOTA_REQUEST_CHANGED = "quota_request_changed"
    # scheduling: workloads reached a state other than by submission or admission (running,
    # ended, back in the queue); payload workload_ids.
    WORKLOAD_STATE_CHANGED = "workload_state_changed"
    # billing: an order was approved and awaits its fulfilment; payload order_id.
    ORDER_APPROVED = "order_approved"
    # billing: an order was submitted or changed state; payload order_id, change (the state it
    # reached) and occurrence (tells a failure after a retry from the last). Its mail is keyed
    # by them.
    ORDER_CHANGED = "order_changed"
    # billing: a budget's spend crossed one of its thresholds; payload alert_id.
    BUDGET_THRESHOLD_CROSSED = "budget_threshold_crossed"
    # billing: an invoice (or a credit note) was issued; payload invoice_id.
    INVOICE_ISSUED = "invoice_issued"
    # webhooks: deliveries wait for an attempt (new, redelivered, or due again); payload
    # delivery_ids.
    WEBHOOK_DELIVERIES_DUE = "webhook_deliveries_due"


class ExtensionPoint(StrEnum):
    # scheduling: a submission (one workload, or a batch) is about to be accepted; context
    # caller, project, workloads (unsaved); checked once however many.
    WORKLOAD_SUBMISSION = "workload_submission"
    # scheduling: a cycle is about to weigh pending work; context projects (the id of each
    # project that has pending work, to its organization's id). A check answers, once per
    # cycle however many workloads wait, {project id: (code, reason)} for the projects whose
    # pending work must be held (not admitted) for now; the reason is shown on each one held.
    PENDING_HOLD = "pending_hold"
    # scheduling: operators' insights are gathered; context now; each check answers an
    # insight (scheduling.insights.Insight) or None.
    OPERATOR_INSIGHTS = "operator_insights"
    # scheduling: what use of the cluster would cost an organization (a what-if, a replay);
    # context organization_id, at. A check answers {(GPU class, MIG profile, tier or ""):
    # hourly unit price} of the on-demand prices in force then ("" prices every tier that
    # has none of its own), or None.
    USAGE_PRICES = "usage_prices"


_subscribers: dict[Event, list[Callable[..., object]]] = defaultdict(list)
_checks: dict[ExtensionPoint, list[Callable[..., object]]] = defaultdict(list)


def subscribe(event: Event, handler: Callable[..., object]) -> None:
    """Call `handler(**payload)` after each commit that published `event`."""
    if handler not in _subscribers[event]:
        _subscribers[event].append(handler)


def publish(event: Event, **payload) -> None:
    """Run the event's subscribers once the current transaction commits (at once outside one)."""
    for handler in _subscribers[Event(event)]:
        transaction.on_commit(partial(handler, **payload))


def check_register(point: ExtensionPoint, check: Callable[..., object]) -> None:
    if check not in _checks[point]:
        _checks[point].append(check)


def holds_collect(point: ExtensionPoint, **context) -> dict:
    """Ask every check registered for `point` what it holds: their answers merged, the first
    check's reason kept where two hold the same key."""
    held: dict = {}
    for check in _checks[ExtensionPoint(point)]:
        for key, reason in (check(**context) or {}).items():
            held.setdefault(key, reason)
    return held


def checks_run(point: ExtensionPoint, **context) -> None:
    """Run every check registered for `point`, in registration order; the first refusal raises."""
    for check in _checks[ExtensionPoint(point)]:
        check(**context)


def checks_answers(point: ExtensionPoint, **context) -> list[object]:
    """What every check registered for `point` answers, in registration order (None
    answers left out): for points that gather rather than refuse."""
    answers = (check(**context) for check in _checks[ExtensionPoint(point)])
    return [answer for answer in answers if answer is not None]
