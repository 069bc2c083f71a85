"""Reads of the catalog: what is offered to an organization at what price, and what the
cluster offers that no price covers."""

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db.models import DateTimeField, DecimalField, OuterRef, Q, QuerySet, Subquery

from scheduling import selectors as scheduling_selectors
from tenants.models import Organization
from tenants.permissions import Action, Caller, authorize

from ..models import CatalogItem, PriceVersion
from ..pricing import offered_to, versions_in_force, versions_next

# The price columns as the model stores them (SQLite answers a price with more places: pages
# show 4).
FIELDS = {
    "unit_price": DecimalField(max_digits=14, decimal_places=4),
    "effective_from": DateTimeField(),
}


def catalog_for(*, caller: Caller, organization: Organization, at: datetime) -> QuerySet:
    """The items the organization may order at ``at`` (public ones and those offered to it,
    active then), each with ``unit_price`` and ``price_from`` (the version of its price in
    force for the organization) and ``next_price`` and ``next_price_from`` (the next version
    that will be), by the rule of ``pricing``."""
    authorize(caller=caller, organization=organization, action=Action.ORGANIZATION_VIEW)

    def price(field: str, rule) -> Subquery:
        versions = rule(
            PriceVersion.objects.filter(item=OuterRef("pk")), organization=organization, at=at
        )
        return Subquery(versions.values(field)[:1], output_field=FIELDS[field])

    return (
        offered_to(organization=organization, at=at)
        .select_related("gpu_class", "tier")
        .annotate(
            unit_price=price("unit_price", versions_in_force),
            price_from=price("effective_from", versions_in_force),
            next_price=price("unit_price", versions_next),
            next_price_from=price("effective_from", versions_next),
        )
    )


@dataclass(frozen=True)
class UnpricedResource:
    """Something the cluster offers (a class's whole GPUs and shares, or one of its MIG
    profiles) that no list price covers now."""

    gpu_class: str
    mig_profile: str
    kind: str  # CatalogItem.Kind

    def __str__(self) -> str:
        what = self.gpu_class + (f" {self.mig_profile} instances" if self.mig_profile else "")
        return f"{what}: no {CatalogItem.Kind(self.kind).label.split(' (')[0].lower()} price"


def resources_unpriced(*, at: datetime) -> list[UnpricedResource]:
    """Operators: what the cluster's pools offer (each class's GPUs and GPU shares, each of
    its MIG profiles) with no public on-demand or reservation item for every tier that has a
    list price in force at ``at``: use of it would be rated at no price."""
    classes = {pool.gpu_class.pk: pool.gpu_class for pool in scheduling_selectors.pool_list()}
    priced = set(
        PriceVersion.objects.filter(
            organization__isnull=True,
            effective_from__lte=at,
            item__public=True,
            item__tier__isnull=True,
            item__active_from__lte=at,
            item__kind__in=(CatalogItem.Kind.ON_DEMAND, CatalogItem.Kind.RESERVATION),
        )
        .filter(Q(item__active_until__isnull=True) | Q(item__active_until__gt=at))
        .values_list("item__gpu_class", "item__mig_profile", "item__kind")
    )
    return [
        UnpricedResource(gpu_class=gpu_class.name, mig_profile=profile, kind=kind)
        for gpu_class in sorted(classes.values(), key=lambda c: c.name)
        for profile in ["", *sorted(gpu_class.mig_profiles or [])]
        for kind in (CatalogItem.Kind.ON_DEMAND, CatalogItem.Kind.RESERVATION)
        if (gpu_class.pk, profile, kind) not in priced
    ]


def usage_prices(*, organization_id, at: datetime) -> dict[tuple[str, str, str], Decimal]:
    """Registered with scheduling (``ExtensionPoint.USAGE_PRICES``): the hourly unit price of
    each on-demand resource the organization may use at ``at``, keyed (GPU class, MIG profile,
    tier or "" for every tier), as rating would apply it: of two items for the same key the
    first by slug (``pricing.on_demand_items``), items with no price in force left out."""
    price = Subquery(
        versions_in_force(
            PriceVersion.objects.filter(item=OuterRef("pk")), organization=organization_id, at=at
        ).values("unit_price")[:1],
        output_field=FIELDS["unit_price"],
    )
    items = (
        offered_to(organization=organization_id, at=at)
        .filter(kind=CatalogItem.Kind.ON_DEMAND)
        .annotate(unit_price=price)
        .filter(unit_price__isnull=False)
        .order_by("slug")
        .values_list("gpu_class__name", "mig_profile", "tier__name", "unit_price")
    )
    prices: dict[tuple[str, str, str], Decimal] = {}
    for gpu_class, mig_profile, tier, unit_price in items:
        prices.setdefault((gpu_class, mig_profile, tier or ""), unit_price)
    return prices
