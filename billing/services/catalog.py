"""Writes of the catalog (operators only): what it offers, to whom, and its prices, which are
only ever added as versions from a moment not in the past; each audited."""

from datetime import datetime
from decimal import Decimal

from django.db import transaction

from portal import clock
from tenants.models import Organization
from tenants.permissions import Caller, require_operator
from tenants.services import audit_record

from ..models import CatalogItem, PriceVersion
from .versions import version_add


def catalog_item_save(
    *, caller: Caller, item: CatalogItem, organizations: list[Organization] | None = None
) -> CatalogItem:
    """An operator adds or changes what the catalog offers (its prices are versions), and to
    which organizations besides the public (``organizations``; None: as they were)."""
    require_operator(caller)
    item.full_clean()
    with transaction.atomic():
        item.save()
        payload = {"kind": item.kind, "gpu_class": item.gpu_class.name, "public": item.public}
        if organizations is not None:
            item.organizations.set(organizations)
            payload["organizations"] = sorted(o.slug for o in organizations)
        audit_record(
            caller=caller,
            organization=None,
            action="catalog.item_save",
            target=item,
            payload=payload,
        )
    return item


def price_version_problems(*, effective_from: datetime, now: datetime) -> dict[str, list[str]]:
    """What is wrong with a new price version's date (empty: nothing)."""
    if effective_from < now:
        return {"effective_from": ["A price version cannot start in the past."]}
    return {}


def price_version_add(
    *,
    caller: Caller,
    item: CatalogItem,
    unit_price: Decimal,
    effective_from: datetime | None = None,
    organization: Organization | None = None,
    now: datetime | None = None,
) -> PriceVersion:
    """A new unit price for ``item`` from ``effective_from`` on (None: from now), which may not
    lie in the past: a price in force once stays what was charged."""
    require_operator(caller)
    now = now or clock.now()
    effective_from = effective_from or now
    version = PriceVersion(
        item=item,
        organization=organization,
        unit_price=unit_price,
        effective_from=effective_from,
        created_by=caller.user,
    )
    return version_add(
        caller=caller,
        version=version,
        problems=price_version_problems(effective_from=effective_from, now=now),
        action="catalog.price_add",
        payload=lambda saved: {
            "item": item.slug,
            "organization": organization.slug if organization else None,
            "unit_price": str(saved.unit_price),
            "effective_from": effective_from.isoformat(),
        },
        taken="The item already has a price from that moment.",
    )
