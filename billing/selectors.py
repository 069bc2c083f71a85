"""Reads of billing, scoped to the caller's organizations; and what waits for operators."""

from dataclasses import dataclass
from datetime import datetime

from django.db.models import DecimalField, OuterRef, Q, QuerySet, Subquery

from portal.db import one_or_not_found
from scheduling.models import QuotaRequest, Reservation
from tenants.models import Organization
from tenants.permissions import Action, Caller, authorize, require_operator

from .models import CatalogItem, Order, PriceVersion

# A unit price as the model stores it (SQLite answers more places: pages show 4).
PRICE = DecimalField(max_digits=14, decimal_places=4)


def price_in_force(*, item: CatalogItem, at: datetime) -> PriceVersion | None:
    """The version of the item's price in force at ``at``: the latest that started by then."""
    return item.prices.filter(effective_from__lte=at).order_by("-effective_from").first()


def catalog_for(*, caller: Caller, organization: Organization, at: datetime) -> QuerySet:
    """The items the organization may order at ``at`` (public ones and those offered to it,
    active then), each with ``unit_price`` and ``price_from`` (the price in force) and
    ``next_price`` and ``next_price_from`` (the next version, if one is dated)."""
    authorize(caller=caller, organization=organization, action=Action.ORGANIZATION_VIEW)
    in_force = PriceVersion.objects.filter(item=OuterRef("pk"), effective_from__lte=at).order_by(
        "-effective_from"
    )
    upcoming = PriceVersion.objects.filter(item=OuterRef("pk"), effective_from__gt=at).order_by(
        "effective_from"
    )
    return (
        CatalogItem.objects.filter(Q(public=True) | Q(organizations=organization))
        .filter(active_from__lte=at)
        .filter(Q(active_until__isnull=True) | Q(active_until__gt=at))
        .distinct()
        .select_related("gpu_class", "tier")
        .annotate(
            unit_price=Subquery(in_force.values("unit_price")[:1], output_field=PRICE),
            price_from=Subquery(in_force.values("effective_from")[:1]),
            next_price=Subquery(upcoming.values("unit_price")[:1], output_field=PRICE),
            next_price_from=Subquery(upcoming.values("effective_from")[:1]),
        )
    )


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
