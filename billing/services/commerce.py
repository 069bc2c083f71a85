"""Orders, from a tenant's submission through the approval workflow (``tenants.approvals``) to
their fulfilment through scheduling's services; each step audited. Cancellation charges, and
the beat's safety net for both."""

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from portal import clock
from portal.bounds import BOOKING_HORIZON, BOOKING_HORIZON_YEARS, booking_horizon_error
from portal.errors import Conflict, DomainError
from portal.events import Event, publish
from portal.mail import mail_where_it_stands
from scheduling import selectors as scheduling_selectors
from scheduling import services as scheduling
from scheduling.models import Reservation
from tenants import selectors as tenant_selectors
from tenants.approvals import Workflow
from tenants.models import Organization
from tenants.permissions import Action, Caller, authorize, require_operator
from tenants.services import audit_record

from .. import selectors
from ..models import CancellationCharge, CatalogItem, Order
from ..pricing import period_price


@dataclass(frozen=True)
class OrderRequest:
    item: str
    quantity: int
    starts_at: datetime
    ends_at: datetime
    project: str | None = None
    pool: str | None = None


def order_create(
    *, caller: Caller, organization: Organization, request: OrderRequest, submit: bool = True
) -> Order:
    """An owner or admin orders a catalog item (submitted at once unless ``submit`` is False:
    a draft). Field errors name what is wrong; nothing is written then."""
    authorize(caller=caller, organization=organization, action=Action.ORDER_MANAGE)
    now = clock.now()
    item = (
        selectors.catalog_for(caller=caller, organization=organization, at=now)
        .filter(slug=request.item)
        .first()
    )
    errors: dict[str, list[str]] = {}
    if item is None:
        errors["item"] = [f"{request.item!r} is not offered to {organization.slug} now."]
    elif not item.orderable:
        errors["item"] = [
            f"{item.name} is billed as it is used (per {item.unit}), not ordered: submit"
            " workloads, or order reserved GPUs or a quota package."
        ]
    if request.starts_at < now:
        errors["starts_at"] = ["The period starts in the past."]
    elif too_far := booking_horizon_error(request.starts_at, now=now):
        errors["starts_at"] = [too_far]
    if request.ends_at <= request.starts_at:
        errors["ends_at"] = ["The period ends after it starts."]
    elif item is not None:
        errors.update(_period_problems(item, request.ends_at - request.starts_at))
    if item is not None and item.orderable:
        errors.update(_pool_problems(item, request))
        if "quantity" not in errors:
            errors.update(_capacity_problems(item, request))
    project = tenant_selectors.project_named(
        organization=organization, slug=request.project, errors=errors
    )
    if errors:
        raise ValidationError(errors)
    order = Order(
        organization=organization,
        project=project,
        item=item,
        quantity=request.quantity,
        starts_at=request.starts_at,
        ends_at=request.ends_at,
        pool=request.pool or "",
        created_by=caller.user,
    )
    order.full_clean()
    with transaction.atomic():
        order.save()
        ORDERS.audited(caller, order, "create")
        if submit:
            _submit(caller, order, now=now)
    return order


# The largest total an order keeps (Order.total: 16 digits, 2 of them decimals).
TOTAL_CEILING = Decimal("1E14")


def _period_problems(item: CatalogItem, length: timedelta) -> dict[str, list[str]]:
    """An order's period within the item's minimum commitment and maximum period."""
    if length < timedelta(hours=item.minimum_commitment_hours):
        return {"ends_at": [f"At least {item.minimum_commitment_hours} h, by the item's terms."]}
    longest = item.maximum_period_hours
    if longest is not None and length > timedelta(hours=longest):
        return {"ends_at": [f"At most {longest} h, by the item's terms."]}
    # What the portal sells stays within dates it can plan and totals it can keep.
    if length > BOOKING_HORIZON:
        return {"ends_at": [f"An order lasts at most {BOOKING_HORIZON_YEARS} years."]}
    return {}


def _capacity_problems(item: CatalogItem, request: OrderRequest) -> dict[str, list[str]]:
    """No more than the cluster could ever give: reserved GPUs (or MIG instances) within one
    pool of the class, as a reservation is; a quota package's GPUs within the whole class."""
    capacities = scheduling_selectors.class_capacities(
        gpu_class=item.gpu_class, mig_profile=item.mig_profile
    )
    unit = f"{item.mig_profile} instances" if item.mig_profile else "GPUs"
    if item.kind == CatalogItem.Kind.RESERVATION:
        if request.pool:
            where, largest = f"pool {request.pool}", capacities.get(request.pool, 0)
        else:
            where = f"the largest pool of {item.gpu_class.name}"
            largest = max(capacities.values(), default=0)
        if request.quantity > largest:
            return {"quantity": [f"{request.quantity} {unit}, but {where} has {largest}."]}
    if item.kind == CatalogItem.Kind.QUOTA_PACKAGE:
        asked, total = request.quantity * item.quantity, sum(capacities.values())
        if asked > total:
            return {
                "quantity": [
                    f"{request.quantity} packages of {item.quantity} are {asked} {unit},"
                    f" but the cluster has {total} of {item.gpu_class.name}."
                ]
            }
    return {}


def _pool_problems(item: CatalogItem, request: OrderRequest) -> dict[str, list[str]]:
    """A dedicated pool is ordered one at a time and by name; any named pool must be one of
    the item's GPU class."""
    errors: dict[str, list[str]] = {}
    dedicated = item.kind == CatalogItem.Kind.DEDICATED_POOL
    if dedicated and request.quantity != 1:
        errors["quantity"] = ["A dedicated pool is ordered one at a time."]
    if dedicated and not request.pool:
        errors["pool"] = ["Name the pool to dedicate."]
    elif request.pool and not scheduling_selectors.pool_of_class_exists(
        name=request.pool, gpu_class=item.gpu_class
    ):
        errors["pool"] = [f"No pool {request.pool!r} of {item.gpu_class.name}."]
    return errors


def order_submit(*, caller: Caller, order: Order) -> Order:
    authorize(caller=caller, organization=order.organization, action=Action.ORDER_MANAGE)
    with transaction.atomic():
        locked = ORDERS.lock(order, Order.State.DRAFT)
        _submit(caller, locked, now=clock.now())
    return locked


def _submit(caller: Caller, order: Order, *, now: datetime) -> None:
    """Fix the price in force now; approve at once under the item's rule."""
    if not order.item.orderable:  # a draft of an item that is no longer ordered
        raise ValidationError({"item": [f"{order.item.name} is billed as it is used."]})
    version = selectors.price_in_force(item=order.item, at=now, organization=order.organization)
    if version is None:
        raise ValidationError({"item": ["The item has no price yet."]})
    order.price_version = version
    order.unit_price = version.unit_price
    order.total = period_price(
        version.unit_price, order.quantity, order.item, order.starts_at, order.ends_at
    )
    if order.total >= TOTAL_CEILING:
        raise ValidationError(
            {"quantity": [f"The total would be {order.total:,}: order less, or for less long."]}
        )
    order.submitted_at = now
    order.state = Order.State.SUBMITTED
    ceiling = order.item.auto_approve_up_to
    if ceiling is not None and order.total <= ceiling:
        order.state = Order.State.APPROVED
        order.decided_at = now
        order.decision_reason = f"Approved by the item's rule (total up to {ceiling})."
    order.save()
    ORDERS.audited(caller, order, "submit")


def order_approve(*, caller: Caller, order: Order) -> Order:
    """An operator approves a submitted order; the worker fulfils it."""
    return ORDERS.approve(caller=caller, row=order)


def order_reject(*, caller: Caller, order: Order, reason: str) -> Order:
    return ORDERS.reject(caller=caller, row=order, reason=reason)


def order_cancel(*, caller: Caller, order: Order) -> Order:
    """An owner or admin cancels an order before its fulfilment begins."""
    return ORDERS.cancel(caller=caller, row=order)


def order_fulfil(*, order_id: str) -> Order | None:
    """Make what an approved order bought, once: the order is locked, and what it makes is
    written in the same transaction as the order's new state, so a run killed half way leaves
    nothing and the retry makes it; a run after success changes nothing. A refusal (the GPUs
    are not free any more, say) fails the order with the reason; an operator may retry it."""
    with transaction.atomic():
        order = Order.objects.select_for_update().filter(pk=order_id).first()
        if order is None or order.state not in (
            Order.State.APPROVED,
            Order.State.FULFILLING,
            Order.State.FAILED,
        ):
            return order
        order.state = Order.State.FULFILLING
        order.failure_reason = ""
        order.save(update_fields=["state", "failure_reason"])
        caller = Caller(user=order.created_by)
        try:
            with transaction.atomic():
                made = _make(caller, order)
        except (ValidationError, DomainError) as refused:
            order.state = Order.State.FAILED
            order.failure_reason = _reason(refused)[:500]
            order.save(update_fields=["state", "failure_reason"])
            ORDERS.audited(None, order, "fail")
            return order
        order.state = Order.State.FULFILLED
        order.fulfilled_at = clock.now()
        order.fulfilled_objects = made
        order.save(update_fields=["state", "fulfilled_at", "fulfilled_objects"])
        ORDERS.audited(None, order, "fulfil")
    return order


def order_fulfil_retry(*, caller: Caller, order: Order) -> Order:
    """An operator queues a failed (or stuck) fulfilment again."""
    require_operator(caller)
    with transaction.atomic():
        locked = ORDERS.lock(order, Order.State.FAILED, Order.State.FULFILLING)
        ORDERS.audited(caller, locked, "retry")
        publish(Event.ORDER_APPROVED, order_id=str(locked.pk))
    return locked


def _make(caller: Caller, order: Order) -> list[dict]:
    """What the order's item creates, through scheduling's services."""
    item = order.item
    if item.kind in (CatalogItem.Kind.RESERVATION, CatalogItem.Kind.DEDICATED_POOL):
        # A dedicated pool is all of the pool's GPUs reserved for the period: others may only
        # borrow them as preemptible work while the organization leaves them idle.
        gpus = (
            order.quantity
            if item.kind == CatalogItem.Kind.RESERVATION
            else scheduling_selectors.pool_capacity_named(order.pool)
        )
        held = scheduling.reservations_request(
            caller=caller,
            organization=order.organization,
            request=scheduling.ReservationRequest(
                gpu_class=item.gpu_class.name,
                gpus=gpus,
                starts_at=order.starts_at,
                ends_at=order.ends_at,
                pool=order.pool or None,
                project=order.project.slug if order.project else None,
                mig_profile=item.mig_profile or None,
            ),
            preapproved=True,
        )
        return [{"reservation": str(r.pk)} for r in held]
    if item.kind == CatalogItem.Kind.QUOTA_PACKAGE:
        granted = scheduling.quota_grant_for_period(
            caller=caller,
            organization=order.organization,
            ask=scheduling.QuotaAsk(
                gpu_class=item.gpu_class.name,
                amount=item.quantity * order.quantity,
                reason=f"Order {order.pk}: {item.name}",
                resource="mig" if item.mig_profile else "gpus",
                mig_profile=item.mig_profile,
                project=order.project.slug if order.project else None,
                starts_at=order.starts_at,
                until=order.ends_at,
            ),
        )
        return [{"quota_request": str(granted.pk)}]
    raise Conflict(
        f"{item.get_kind_display()} is set up by an operator, not automatically.",
        code="manual_fulfilment",
    )


def _reason(refused: Exception) -> str:
    if isinstance(refused, ValidationError):
        return " ".join(refused.messages)
    return refused.message


ORDER_MAILED_ACTIONS = (
    "order.submit",
    "order.approve",
    "order.reject",
    "order.cancel",
    "order.fulfil",
    "order.fail",
)


def order_email_send(*, order_id: str, change: str = "", occurrence: str = "") -> int:
    """Tell the orderer (and, for a submitted order, the operators) of one event of an order:
    ``change`` is the state it reached (the current one if not given), ``occurrence`` tells a
    repeatable event (a failure after a retry) from the last one. Each is mailed once, from the
    state's template (a draft has none: it mails nobody); the number of mails sent now."""
    order = Order.objects.select_related("organization", "item", "created_by").filter(pk=order_id)
    order = order.first()
    if order is None:
        return 0
    change = change or order.state
    return mail_where_it_stands(
        key=f"order:{order.pk}:{change}" + (f":{occurrence}" if occurrence else ""),
        requester=order.created_by,
        waits_for_operators=change == Order.State.SUBMITTED,
        template=f"billing/email/order_{change}.txt",
        context={"order": order, "currency": settings.PORTAL_CURRENCY},
    )


def _order_payload(order: Order) -> dict:
    return {
        "item": order.item.slug,
        "quantity": order.quantity,
        "total": str(order.total) if order.total is not None else None,
        "state": order.state,
    }


def _order_published(order: Order, change: str, audited) -> None:
    """The steps its creator is told of are published (the state it reached, and for a
    failure which one: a retried order may fail again); one approved awaits its fulfilment."""
    if audited.action not in ORDER_MAILED_ACTIONS:
        return
    failed = change == Order.State.FAILED
    publish(
        Event.ORDER_CHANGED,
        order_id=str(order.pk),
        change=change,
        occurrence=str(audited.pk) if failed else "",
    )
    if change == Order.State.APPROVED:
        publish(Event.ORDER_APPROVED, order_id=str(order.pk))


ORDERS = Workflow(
    model=Order,
    name="order",
    noun="order",
    submitted=Order.State.SUBMITTED,
    approved=Order.State.APPROVED,
    rejected=Order.State.REJECTED,
    cancelled=Order.State.CANCELLED,
    related=("organization", "item", "project"),
    payload=_order_payload,
    publish=_order_published,
    cancellable=Order.CANCELLABLE,
    cancel_action=Action.ORDER_MANAGE,
    decide_code="order_state",
    cancel_code="order_state",
)


def cancellation_charge_record(*, reservation_id: str) -> CancellationCharge | None:
    """Record what cancelling the reservation cost, once (the reservation's row is unique in
    the table): None while it is not cancelled."""
    reservation = (
        Reservation.objects.select_related("organization", "gpu_class")
        .filter(pk=reservation_id, state=Reservation.State.CANCELLED)
        .first()
    )
    if reservation is None:
        return None
    recorded = CancellationCharge.objects.filter(reservation=reservation).first()
    if recorded is not None:
        return recorded
    charge = selectors.cancellation_quote(reservation=reservation, at=reservation.cancelled_at)
    try:
        with transaction.atomic():
            charge.save()
            audit_record(
                caller=None,
                organization=reservation.organization,
                action="reservation.cancellation_charge",
                target=charge,
                payload={"reservation": str(reservation.pk), "amount": str(charge.amount)},
            )
    except IntegrityError:  # recorded meanwhile by another run
        return CancellationCharge.objects.get(reservation=reservation)
    return charge


def billing_reconcile(*, now: datetime | None = None) -> dict[str, int]:
    """Finish what a lost task left (the beat's safety net): fulfil approved orders that have
    waited longer than ``PORTAL_RECONCILE_SECONDS`` (their task died with its worker, or its
    event was lost; fulfilment is idempotent, so a slow one run twice makes its things once),
    and record the charges of cancelled reservations that have none. Counts of each."""
    now = now or clock.now()
    waited = now - timedelta(seconds=settings.PORTAL_RECONCILE_SECONDS)
    waiting = Order.objects.filter(state=Order.State.APPROVED, decided_at__lte=waited)
    fulfilled = [order_fulfil(order_id=pk) for pk in waiting.values_list("pk", flat=True)[:100]]
    uncharged = (
        Reservation.objects.filter(state=Reservation.State.CANCELLED)
        .exclude(pk__in=CancellationCharge.objects.values("reservation_id"))
        .values_list("pk", flat=True)[:500]
    )
    charged = [cancellation_charge_record(reservation_id=pk) for pk in uncharged]
    return {"orders_fulfilled": len(fulfilled), "charges_recorded": len(charged)}
