"""Showback: an organization's part of the operator's books, pool by pool: its GPU-hours of
use and its share of the idle hours under ``PORTAL_BOOKS_IDLE_SHARING``, and, where the
operator shows costs, what they cost the operator. What each organization is shown is the
operator's choice (``ShowbackSetting``: off, GPU-hours only, or GPU-hours and cost)."""

from collections import defaultdict
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal, localcontext
from uuid import UUID

from django.conf import settings

from portal.errors import NotFound
from portal.money import to_cents
from scheduling import selectors as scheduling_selectors
from scheduling.models import NodePool, Reservation
from tenants.models import Organization
from tenants.permissions import Action, Caller, authorize, require_operator

from ..allocation import Allocation
from ..models import ShowbackSetting
from .books import gpu_hours, measured_watts, pool_allocation, pool_cost

IDLE = ("reserved_idle", "guarantee_idle", "unallocated_idle")


@dataclass(frozen=True)
class Showback:
    """One organization's part of one pool's books: its GPU-hours of use (its own
    reservations' and outside them) and its share of the pool's idle GPU-hours under
    ``PORTAL_BOOKS_IDLE_SHARING``; with costs shown, those at the pool's cost per GPU-hour
    (None: the operator shows GPU-hours only)."""

    pool: NodePool
    used_hours: Decimal
    idle_hours: Decimal
    usage_cost: Decimal | None = None
    idle_cost: Decimal | None = None

    @property
    def total(self) -> Decimal | None:
        return None if self.usage_cost is None else self.usage_cost + self.idle_cost


def showback_level(*, organization: Organization) -> str:
    """What the operator shows the organization of its showback: its ``ShowbackSetting``'s
    level, or ``PORTAL_BOOKS_SHOWBACK`` where it has none."""
    level = (
        ShowbackSetting.objects.filter(organization=organization)
        .values_list("level", flat=True)
        .first()
    )
    return level or settings.PORTAL_BOOKS_SHOWBACK


@dataclass(frozen=True)
class ShowbackOffer:
    """What the operator shows an organization (``level``), and whether it was set for it
    (``ShowbackSetting``) or is the portal's default."""

    organization: Organization
    level: str
    is_default: bool


def showback_offer_for_operator(*, caller: Caller, organization: Organization) -> ShowbackOffer:
    require_operator(caller)
    setting = ShowbackSetting.objects.filter(organization=organization).first()
    return ShowbackOffer(
        organization=organization,
        level=setting.level if setting else settings.PORTAL_BOOKS_SHOWBACK,
        is_default=setting is None,
    )


def showback(
    *, caller: Caller, organization: Organization, starts_at: datetime, ends_at: datetime
) -> list[Showback]:
    """The organization's showback of each GPU pool over [starts_at, ends_at), for its owners
    and admins, as the operator shows it (``showback_level``; off: 404): GPU-hours only, or
    with their cost."""
    level = showback_level(organization=organization)
    if level == ShowbackSetting.Level.OFF:
        raise NotFound("Showback is not offered.")
    authorize(caller=caller, organization=organization, action=Action.INVOICE_VIEW)
    with_cost = level == ShowbackSetting.Level.COST
    watts = measured_watts(starts_at=starts_at, ends_at=ends_at) if with_cost else {}
    found = []
    for pool in scheduling_selectors.pool_list():
        allocation = pool_allocation(pool=pool, starts_at=starts_at, ends_at=ends_at)
        cost = (
            pool_cost(pool=pool, starts_at=starts_at, ends_at=ends_at, watts=watts)
            if with_cost
            else None
        )
        found.append(_pool_showback(pool, allocation, cost, organization.pk))
    return found


def _pool_showback(
    pool: NodePool, allocation: Allocation, cost: Decimal | None, organization_id
) -> Showback:
    total = allocation.total
    owners = dict(
        Reservation.objects.filter(pk__in=list(allocation.reservations)).values_list(
            "pk", "organization_id"
        )
    )
    used = defaultdict(int)
    for (organization, _, _), amount in allocation.on_demand.items():
        used[organization] += amount
    held = defaultdict(int)
    for key, parts in allocation.reservations.items():
        owner = owners.get(UUID(key))
        used[owner] += parts["used"]
        held[owner] += parts["idle"]
    for (owner, _), idle in allocation.guarantees.items():
        held[owner] += idle
    weights = {"apart": {}, "usage": used, "guarantees": held}[settings.PORTAL_BOOKS_IDLE_SHARING]
    idle = sum(allocation.totals[name] for name in IDLE)
    whole = sum(weights.values())
    with localcontext(prec=60):
        share = Decimal(weights.get(organization_id, 0)) / whole if whole else Decimal(0)
        hours = Showback(
            pool=pool,
            used_hours=gpu_hours(used[organization_id]),
            idle_hours=gpu_hours(idle * share),
        )
        if cost is None:
            return hours
        per_unit = cost / total if total else Decimal(0)
        return replace(
            hours,
            usage_cost=to_cents(per_unit * used[organization_id]),
            idle_cost=to_cents(per_unit * idle * share),
        )
