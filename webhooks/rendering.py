"""Which webhook event type an event of the portal is, and what its objects look like: each as
the API shows it to the organization's owners and admins (the only ones who manage webhooks, so
money is shown), rendered when its deliveries are made and then never again."""

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from billing.api.serializers import BudgetOutput, InvoiceOutput, OrderOutput
from billing.models import BudgetAlert, Invoice, Order
from portal.events import Event
from scheduling import selectors as scheduling_selectors
from scheduling.api.serializers import QuotaRequestOutput, ReservationOutput, WorkloadOutput
from scheduling.models import QuotaRequest, Reservation, Workload

from .models import EventType

# The changes of an order, a reservation or a quota request that are decisions.
DECISIONS = frozenset({"approved", "rejected", "denied"})


@dataclass(frozen=True)
class Rendered:
    organization_id: object
    organization_slug: str
    object_id: str
    data: dict


def _workloads(ids: Iterable[str]) -> list[Rendered]:
    workloads = scheduling_selectors.workloads_as_shown(Workload.objects.filter(pk__in=list(ids)))
    return [
        Rendered(w.project.organization_id, w.project.organization.slug, str(w.pk), data)
        for w in workloads
        for data in [WorkloadOutput(w).data]
    ]


def _rendered(queryset, pk, output: Callable[[object], dict]) -> list[Rendered]:
    return [
        Rendered(row.organization_id, row.organization.slug, str(row.pk), output(row))
        for row in queryset.filter(pk=pk)
    ]


def _orders(pk) -> list[Rendered]:
    orders = Order.objects.select_related("organization", "item", "project", "created_by")
    return _rendered(orders, pk, lambda order: OrderOutput(order, context={"money": True}).data)


def _reservations(pk) -> list[Rendered]:
    reservations = Reservation.objects.select_related(
        "organization", "project", "gpu_class", "pool", "requested_by"
    )
    return _rendered(reservations, pk, lambda row: ReservationOutput(row).data)


def _quota_requests(pk) -> list[Rendered]:
    requests = QuotaRequest.objects.select_related(
        "organization", "project", "gpu_class", "requested_by"
    )
    return _rendered(requests, pk, lambda row: QuotaRequestOutput(row).data)


def _invoices(pk) -> list[Rendered]:
    invoices = Invoice.objects.select_related("organization", "corrects").prefetch_related(
        "lines__project", "lines__gpu_class"
    )
    return _rendered(invoices, pk, lambda row: InvoiceOutput(row).data)


def _budget_alerts(pk) -> list[Rendered]:
    """The budget as the API shows it, spent as when the threshold was crossed, and which."""
    alerts = BudgetAlert.objects.filter(pk=pk).select_related(
        "budget__organization", "budget__project"
    )
    rendered = []
    for alert in alerts:
        budget = alert.budget
        budget.spent = alert.spend
        data = {**BudgetOutput(budget).data, "threshold": alert.threshold}
        rendered.append(Rendered(budget.organization_id, budget.organization.slug, str(pk), data))
    return rendered


@dataclass(frozen=True)
class Route:
    """What a portal event becomes: its webhook event type, the payload key naming its
    object(s), how they are rendered, and whether only its decisions are told of."""

    event_type: str
    key: str
    render: Callable[[object], list[Rendered]]
    decisions_only: bool = False


ROUTES = {
    Event.WORKLOADS_SUBMITTED: Route(EventType.WORKLOAD_STATE_CHANGED, "workload_ids", _workloads),
    Event.WORKLOADS_ADMITTED: Route(EventType.WORKLOAD_STATE_CHANGED, "workload_ids", _workloads),
    Event.WORKLOAD_STATE_CHANGED: Route(
        EventType.WORKLOAD_STATE_CHANGED, "workload_ids", _workloads
    ),
    Event.ORDER_CHANGED: Route(EventType.ORDER_DECIDED, "order_id", _orders, True),
    Event.RESERVATION_CHANGED: Route(
        EventType.RESERVATION_DECIDED, "reservation_id", _reservations, True
    ),
    Event.QUOTA_REQUEST_CHANGED: Route(
        EventType.QUOTA_REQUEST_DECIDED, "quota_request_id", _quota_requests, True
    ),
    Event.INVOICE_ISSUED: Route(EventType.INVOICE_ISSUED, "invoice_id", _invoices),
    Event.BUDGET_THRESHOLD_CROSSED: Route(
        EventType.BUDGET_THRESHOLD_CROSSED, "alert_id", _budget_alerts
    ),
}


def route_of(event: str, payload: dict) -> Route | None:
    """What a portal event becomes; None for an event (or a change) no webhook tells of."""
    route = ROUTES.get(Event(event))
    if route is None or (route.decisions_only and payload.get("change") not in DECISIONS):
        return None
    return route
