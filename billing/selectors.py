"""Reads of billing, scoped to the caller's organizations; and what waits for operators."""

from dataclasses import dataclass
from datetime import datetime

from django.db.models import (
    Case,
    DateTimeField,
    DecimalField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    When,
)
from django.db.models.functions import Coalesce

from portal.db import one_or_not_found
from scheduling.models import QuotaRequest, Reservation
from tenants.models import Organization
from tenants.permissions import Action, Caller, authorize, require_operator

from .models import CatalogItem, Order, PriceVersion

# The price columns as the model stores them (SQLite answers a price with more places: pages
# show 4).
FIELDS = {
    "unit_price": DecimalField(max_digits=14, decimal_places=4),
    "effective_from": DateTimeField(),
}


def price_in_force(
    *, item: CatalogItem, at: datetime, organization: Organization | None = None
) -> PriceVersion | None:
    """The version of the item's price in force at ``at`` for ``organization``: the latest of
    its own that started by then, or else the latest list price that did."""
    started = item.prices.filter(effective_from__lte=at).order_by("-effective_from")
    if organization is not None:
        own = started.filter(organization=organization).first()
        if own is not None:
            return own
    return started.filter(organization__isnull=True).first()


def catalog_for(*, caller: Caller, organization: Organization, at: datetime) -> QuerySet:
    """The items the organization may order at ``at`` (public ones and those offered to it,
    active then), each with ``unit_price`` and ``price_from`` (the price in force for it, as
    ``price_in_force`` says) and ``next_price`` and ``next_price_from`` (the next version that
    will apply to it: its own, or a list price while it has none of its own in force)."""
    authorize(caller=caller, organization=organization, action=Action.ORGANIZATION_VIEW)

    def first(field: str, owner: Organization | None, *, upcoming: bool) -> Subquery:
        versions = PriceVersion.objects.filter(item=OuterRef("pk"))
        versions = (
            versions.filter(organization=owner)
            if owner
            else versions.filter(organization__isnull=True)
        )
        if upcoming:
            versions = versions.filter(effective_from__gt=at).order_by("effective_from")
        else:
            versions = versions.filter(effective_from__lte=at).order_by("-effective_from")
        return Subquery(versions.values(field)[:1], output_field=FIELDS[field])

    def applying(field: str, *, upcoming: bool):
        """The organization's own version of ``field``, else the list's (for upcoming ones,
        only while none of its own is in force)."""
        listed = first(field, None, upcoming=upcoming)
        if upcoming:
            listed = Case(When(own_price__isnull=True, then=listed), output_field=FIELDS[field])
        return Coalesce(first(field, organization, upcoming=upcoming), listed)

    return (
        CatalogItem.objects.filter(Q(public=True) | Q(organizations=organization))
        .filter(active_from__lte=at)
        .filter(Q(active_until__isnull=True) | Q(active_until__gt=at))
        .distinct()
        .select_related("gpu_class", "tier")
        .annotate(own_price=first("unit_price", organization, upcoming=False))
        .annotate(
            unit_price=applying("unit_price", upcoming=False),
            price_from=applying("effective_from", upcoming=False),
            next_price=applying("unit_price", upcoming=True),
            next_price_from=applying("effective_from", upcoming=True),
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
