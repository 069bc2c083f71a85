"""Reads of orders and what waits for operators; what reservations cost and what cancelling
them does."""

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db.models import QuerySet

from portal.db import one_or_not_found
from portal.errors import Conflict
from scheduling.models import QuotaRequest, Reservation
from tenants.models import Organization
from tenants.permissions import Action, Caller, authorize, require_operator

from ..models import CancellationCharge, CatalogItem, Order
from ..pricing import period_price, price_in_force, reservation_item, to_cents


def order_list(*, caller: Caller, organization: Organization) -> QuerySet[Order]:
    authorize(caller=caller, organization=organization, action=Action.ORGANIZATION_VIEW)
    return Order.objects.filter(organization=organization).select_related(
        "organization", "item", "project", "created_by"
    )


def order_get(*, caller: Caller, organization: Organization, pk) -> Order:
    """One of the organization's orders; any other id is a 404."""
    return one_or_not_found(order_list(caller=caller, organization=organization), pk, "order")


@dataclass(frozen=True)
class PendingApprovals:
    reservations: list
    quota_requests: list
    orders: list

    def __len__(self) -> int:
        return len(self.reservations) + len(self.quota_requests) + len(self.orders)


def approvals_pending(*, caller: Caller) -> PendingApprovals:
    """What waits for an operator, in every organization, oldest first."""
    require_operator(caller)
    return PendingApprovals(
        reservations=list(
            Reservation.objects.filter(state=Reservation.State.REQUESTED)
            .select_related("organization", "gpu_class", "pool", "requested_by")
            .order_by("requested_at")
        ),
        quota_requests=list(
            QuotaRequest.objects.filter(state=QuotaRequest.State.REQUESTED)
            .select_related("organization", "project", "gpu_class", "requested_by")
            .order_by("requested_at")
        ),
        orders=list(
            Order.objects.filter(state=Order.State.SUBMITTED)
            .select_related("organization", "item", "created_by")
            .order_by("submitted_at")
        ),
    )


def order_for_operator(*, caller: Caller, pk) -> Order:
    """Any organization's order, for an operator's decision."""
    require_operator(caller)
    return one_or_not_found(Order.objects.select_related("organization", "item"), pk, "order")


def cancellation_charge_list(
    *, caller: Caller, organization: Organization
) -> QuerySet[CancellationCharge]:
    """The organization's cancellation charges: money, for its owners and admins."""
    authorize(caller=caller, organization=organization, action=Action.INVOICE_VIEW)
    return CancellationCharge.objects.filter(organization=organization).select_related(
        "reservation__gpu_class", "reservation__pool", "item", "order"
    )


def order_of_reservation(reservation: Reservation) -> Order | None:
    """The fulfilled order that made ``reservation``, if one did."""
    return (
        Order.objects.filter(
            organization=reservation.organization_id,
            state=Order.State.FULFILLED,
            fulfilled_objects__icontains=str(reservation.pk),
        )
        .select_related("item")
        .first()
    )


def reservation_terms(
    reservation: Reservation, *, at: datetime | None = None
) -> tuple[Order | None, CatalogItem | None, Decimal]:
    """The order that bought the reservation (if any), the item whose terms apply, and the
    price of the whole window: the order's total, or else the reserved GPU-hours at the price
    in force when it was asked for (or at ``at``: finance pricing it after the fact), of the
    reservation item the organization was offered then of the class and MIG profile (none:
    nothing to charge, and no item)."""
    order = order_of_reservation(reservation)
    if order is not None:
        return order, order.item, order.total
    asked = at or reservation.requested_at
    item = reservation_item(
        organization=reservation.organization,
        gpu_class_id=reservation.gpu_class_id,
        mig_profile=reservation.mig_profile,
        at=asked,
    )
    version = item and price_in_force(item=item, at=asked, organization=reservation.organization)
    if version is None:
        return None, None, Decimal(0)
    price = period_price(
        version.unit_price, reservation.gpus, item, reservation.starts_at, reservation.ends_at
    )
    return None, item, price


def cancellation_quote(*, reservation: Reservation, at: datetime) -> CancellationCharge:
    """What cancelling ``reservation`` at ``at`` costs (unsaved): free until the item's
    ``free_cancellation_hours`` before the window, then its ``cancellation_charge_percent`` of
    the price of what is left of the window (the part already begun is billed as reserved
    use). Rounded half up to cents."""
    order, item, value = reservation_terms(reservation)
    length = reservation.ends_at - reservation.starts_at
    left = max(reservation.ends_at - max(at, reservation.starts_at), timedelta(0))
    remaining = to_cents(value * Decimal(left / length))
    charge = CancellationCharge(
        reservation=reservation,
        organization=reservation.organization,
        order=order,
        item=item,
        cancelled_at=at,
        remaining_value=remaining,
        amount=Decimal(0),
    )
    currency = settings.PORTAL_CURRENCY
    if item is None:
        charge.explanation = (
            f"No catalog item prices {reservation.gpu_class.name} reservations for"
            f" {reservation.organization.slug}: nothing to charge."
        )
        return charge
    charge.free_until = reservation.starts_at - timedelta(hours=item.free_cancellation_hours)
    if at < charge.free_until:
        charge.explanation = (
            f"Free: cancelled before {charge.free_until:%Y-%m-%d %H:%M} UTC,"
            f" {item.free_cancellation_hours} h before the window ({item.name})."
        )
        return charge
    charge.percent = item.cancellation_charge_percent
    charge.amount = to_cents(remaining * charge.percent / 100)
    charge.explanation = (
        f"{charge.percent}% of {remaining} {currency}, the price of the"
        f" {left / timedelta(hours=1):g} h of the window left, cancelled after"
        f" {charge.free_until:%Y-%m-%d %H:%M} UTC ({item.name})."
    )
    return charge


def cancellation_charge_get(
    *, caller: Caller, organization: Organization, reservation: Reservation, now: datetime
) -> CancellationCharge:
    """``cancellation_charge_of`` a reservation of the organization, for those who may see its
    money."""
    authorize(caller=caller, organization=organization, action=Action.INVOICE_VIEW)
    return cancellation_charge_of(reservation=reservation, now=now)


def cancellation_charge_of(*, reservation: Reservation, now: datetime) -> CancellationCharge:
    """What cancelling the reservation cost (recorded, or quoted as of its cancellation until
    the worker records it), or would cost now while it holds GPUs. A Conflict for one that
    was never cancelled and holds nothing."""
    recorded = CancellationCharge.objects.filter(reservation=reservation).first()
    if recorded is not None:
        return recorded
    if reservation.state == Reservation.State.CANCELLED:
        return cancellation_quote(reservation=reservation, at=reservation.cancelled_at)
    if not reservation.is_holding:
        raise Conflict(
            f"The reservation is {reservation.state}: there is nothing to cancel.",
            code="not_holding",
        )
    return cancellation_quote(reservation=reservation, at=now)
