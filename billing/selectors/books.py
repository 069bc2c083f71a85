"""The operator's books of a period, pool by pool (operators only): its capacity attributed
hour by hour (``billing.allocation``) from the nodes' availability, the reservations, the
usage intervals and the quota guarantees as they stood; what it cost (``billing.costing``),
what it earned (its invoices' lines, ``revenue``) and the margin."""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from uuid import UUID

import numpy as np
from django.conf import settings
from django.db import connection
from django.db.models import Case, CharField, F, Q, Value, When
from django.db.models.functions import Cast, Coalesce

from portal.db import EpochMicroseconds
from portal.money import to_cents
from portal.prometheus import PrometheusClient
from scheduling import selectors as scheduling_selectors
from scheduling.engine.model import mig_profile_slices
from scheduling.models import GpuClass, NodePool, PriorityTier, QuotaGrant, Reservation
from tenants.models import Organization, Project

from .. import costing
from ..allocation import (
    CATEGORIES,
    MILLI,
    RUNNING,
    SLICES_PER_GPU,
    UNITS_PER_GPU,
    Allocation,
    Layer,
    Span,
    Work,
)
from ..allocation import allocate as allocate_layers
from ..models import CostModel, UsageInterval
from .revenue import Revenue, revenue

# Unit-microseconds in a GPU-hour.
PER_GPU_HOUR = UNITS_PER_GPU * 3600 * 10**6
WHOLE = ""
TOP = 10
# The revenue of a class that no pool earned, where a pool's name is written (no slug has
# brackets, so no pool is called so).
NO_POOL_LABEL = "(no pool)"


def gpu_hours(unit_microseconds: int) -> Decimal:
    """GPU-hours of unit-microseconds, exact to the microsecond (to 12 places)."""
    return (Decimal(unit_microseconds) / PER_GPU_HOUR).quantize(Decimal("1E-12"))


def pool_capacity_spans(
    *, pool: NodePool, starts_at: datetime, ends_at: datetime
) -> dict[str, list[Span]]:
    """The pool's capacity over [starts_at, ends_at) from its nodes' availability history,
    in milli-units, by layer (``WHOLE`` for whole GPUs, else the MIG profile): what the books
    and the lending credit both read."""
    capacity: dict[str, list[Span]] = defaultdict(list)
    for span in scheduling_selectors.node_availability(
        starts_at=starts_at, ends_at=ends_at, pool=pool
    ):
        available = span.state == span.State.AVAILABLE
        for profile, count in {WHOLE: span.gpu_count, **span.mig_layout}.items():
            if count:
                capacity[profile].append(
                    Span(count * MILLI, span.starts_at, span.ends_at, available=available)
                )
    return capacity


def pool_layers(*, pool: NodePool, starts_at: datetime, ends_at: datetime) -> list[Layer]:
    """What ``billing.allocation`` reads of the pool over [starts_at, ends_at): its whole
    GPUs and each MIG profile's instances, in milli-units, as layers."""
    layers: dict[str, Layer] = defaultdict(lambda: Layer(weight=SLICES_PER_GPU))
    capacity = pool_capacity_spans(pool=pool, starts_at=starts_at, ends_at=ends_at)
    for profile, spans in capacity.items():
        layers[profile].capacity = spans
    for reservation in Reservation.objects.filter(
        Q(state__in=Reservation.BILLED_STATES) | Q(state=Reservation.State.CANCELLED),
        pool=pool,
        starts_at__lt=ends_at,
        ends_at__gt=starts_at,
    ):
        if reservation.held_until > reservation.starts_at and reservation.held_gpus > 0:
            layers[reservation.mig_profile].holdings.append(
                Span(
                    reservation.held_gpus * MILLI,
                    reservation.starts_at,
                    reservation.held_until,
                    owner=(reservation.organization_id, reservation.project_id),
                    key=str(reservation.pk),
                )
            )
    for profile, work in _work(pool=pool, starts_at=starts_at, ends_at=ends_at).items():
        layers[profile].uses = work
    _guarantees(pool, layers, starts_at, ends_at)
    for profile, layer in layers.items():
        if profile:
            layer.weight = mig_profile_slices(profile)
    return list(layers.values())


def _work(*, pool: NodePool, starts_at: datetime, ends_at: datetime) -> dict[str, Work]:
    """The pool's usage intervals over [starts_at, ends_at) by layer, as columns read
    straight off the rows: times as integer microseconds, owners as text (a month's million
    rows build neither a datetime nor a UUID each; each owner's UUIDs are made once)."""
    intervals = UsageInterval.objects.filter(
        Q(ended_at__isnull=True) | Q(ended_at__gt=starts_at),
        pool=pool.name,
        started_at__lt=ends_at,
    ).order_by()
    mig = UsageInterval.Resource.MIG
    of_layer = {
        profile if resource == mig else WHOLE: (
            Q(resource=mig, mig_profile=profile) if resource == mig else ~Q(resource=mig)
        )
        for resource, profile in intervals.values_list("resource", "mig_profile").distinct()
    }
    work = {}
    for layer, rows_of_layer in of_layer.items():
        rows = intervals.filter(rows_of_layer).values_list(
            Cast("organization_id", CharField()),
            Cast("project_id", CharField()),
            "tier_id",
            # A share's amount is milli-GPU already.
            Case(
                When(resource=UsageInterval.Resource.SHARED, then=F("amount")),
                default=F("amount") * MILLI,
            ),
            EpochMicroseconds("started_at"),
            Coalesce(EpochMicroseconds("ended_at"), Value(RUNNING)),
        )
        work[layer] = _columns(rows)
    return work


# Rows of usage read at once: a few tens of megabytes of Python objects at most.
ROWS_AT_ONCE = 50_000


def _columns(rows) -> Work:
    """``Work`` of (organization, project, tier, amount, start, end) rows, read by batches
    through a server-side cursor where the database has them, as the database gives them
    (Django's converters, a call per value, would double the time: every column is text or
    an integer already)."""
    who: dict[tuple, int] = {}
    columns: list[list[np.ndarray]] = [[], [], [], []]
    sql, params = rows.query.sql_with_params()
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while batch := cursor.fetchmany(ROWS_AT_ONCE):
            _batch_add(batch, who, columns)
    amounts, starts, ends, owners = (
        np.concatenate(column) if column else np.zeros(0, dtype=np.int64) for column in columns
    )
    return Work(
        amounts=amounts,
        starts=starts,
        ends=ends,
        owners=owners.astype(np.intp),
        who=tuple((UUID(o), UUID(p), tier) for o, p, tier in who),
    )


def _batch_add(batch: list[tuple], who: dict[tuple, int], columns: list[list]) -> None:
    """Rows' amounts, starts, ends and owners (numbered in ``who``) onto ``columns``."""
    organizations, projects, tiers, *numbers = zip(*batch, strict=True)
    owners = [
        who.setdefault(key, len(who)) for key in zip(organizations, projects, tiers, strict=True)
    ]
    for column, values in zip(columns, [*numbers, owners], strict=True):
        column.append(np.array(values, dtype=np.int64))


def _guarantees(pool: NodePool, layers: dict, starts_at: datetime, ends_at: datetime) -> None:
    """The class's quota guarantees as they stood at each instant (the grants' history), each
    pool of the class holding its share of them in proportion to its schedulable capacity
    now."""
    if pool.gpu_class_id is None:
        return
    spans = scheduling_selectors.quota_grant_history(
        gpu_class=pool.gpu_class_id, starts_at=starts_at, ends_at=ends_at
    ).filter(guarantee__gt=0)
    shares_of = {}
    for span in spans:
        profile = span.mig_profile if span.resource == QuotaGrant.Resource.MIG else WHOLE
        if profile not in shares_of:
            shares_of[profile] = scheduling_selectors.class_capacities(
                gpu_class=pool.gpu_class, mig_profile=profile
            )
        shares = shares_of[profile]
        whole = sum(shares.values())
        if not whole or not shares.get(pool.name):
            continue
        milli = span.guarantee * (1 if span.resource == QuotaGrant.Resource.SHARED else MILLI)
        amount = milli * shares[pool.name] // whole
        if amount:
            layers[profile].guarantees.append(
                Span(
                    amount,
                    max(span.valid_from, starts_at),
                    span.valid_to if span.valid_to and span.valid_to < ends_at else ends_at,
                    owner=(span.organization_id, span.project_id),
                )
            )


def pool_allocation(*, pool: NodePool, starts_at: datetime, ends_at: datetime) -> Allocation:
    """The pool's capacity over [starts_at, ends_at), attributed once (``allocation``)."""
    layers = pool_layers(pool=pool, starts_at=starts_at, ends_at=ends_at)
    return allocate_layers(layers=layers, start=starts_at, end=ends_at)


@dataclass
class PoolBooks:
    """One pool's books over a period: GPU-hours by category, cost, revenue, margin. Without
    a pool (``pool`` None): the revenue of a GPU class invoiced in the period that no listed
    pool earned (a class with no pool left, e.g. retired), with no hours and no cost."""

    pool: NodePool | None
    hours: dict[str, Decimal]
    cost: Decimal
    # Invoiced (``revenue``): issued invoices and credit notes, and drafts of open months.
    revenue: Decimal
    gpu_class_name: str = ""
    revenue_drafts: int = 0
    idle_reservations: list[dict] = field(default_factory=list)
    idle_guarantees: list[dict] = field(default_factory=list)
    # Work outside its organization's reservations, per organization, project and tier.
    on_demand: list[dict] = field(default_factory=list)

    @property
    def pool_name(self) -> str | None:
        return self.pool.name if self.pool else None

    @property
    def pool_label(self) -> str:
        """Its pool's name, or ``NO_POOL_LABEL`` (a CSV cell, a metric's label)."""
        return self.pool.name if self.pool else NO_POOL_LABEL

    @property
    def total_hours(self) -> Decimal:
        return sum(self.hours.values(), Decimal(0))

    @property
    def margin(self) -> Decimal:
        return self.revenue - self.cost

    @property
    def cost_per_gpu_hour(self) -> Decimal | None:
        total = self.total_hours
        return to_cents(self.cost / total) if total else None

    @property
    def costs(self) -> dict[str, Decimal]:
        """The cost by category, in proportion to its hours, in cents; the largest category
        takes what rounding leaves, so they add up to the cost."""
        total = self.total_hours
        if not total:
            return dict.fromkeys(self.hours, Decimal(0))
        costs = {name: to_cents(self.cost * hours / total) for name, hours in self.hours.items()}
        largest = max(self.hours, key=lambda name: self.hours[name])
        costs[largest] += self.cost - sum(costs.values())
        return costs

    @property
    def utilisation(self) -> Decimal | None:
        """The share of the pool's hours that work used (billed, reserved and used, lent)."""
        total = self.total_hours
        used = self.hours["used_billed"] + self.hours["reserved_used"] + self.hours["reserved_lent"]
        return (used / total).quantize(Decimal("0.0001")) if total else None


def books(
    *,
    starts_at: datetime,
    ends_at: datetime,
    pools=None,
    watts: dict[str, Decimal] | None = None,
) -> list[PoolBooks]:
    """Every GPU pool's books (or ``pools``') over [starts_at, ends_at). ``watts``: average
    watts per GPU by node name (None: as DCGM measured them, ``measured_watts``); nameplate
    for the nodes not named. Every pool's books end with a row per GPU class whose invoiced
    revenue no pool earned (``unplaced_books``), so that their revenue adds up to the
    invoices'."""
    every_pool = pools is None
    pools = list(scheduling_selectors.pool_list()) if every_pool else pools
    watts = measured_watts(starts_at=starts_at, ends_at=ends_at) if watts is None else watts
    earned = revenue(starts_at=starts_at, ends_at=ends_at)
    found = [
        pool_books(pool=pool, starts_at=starts_at, ends_at=ends_at, watts=watts, earned=earned)
        for pool in pools
    ]
    if every_pool:
        found += unplaced_books(earned=earned, placed={pool.name for pool in pools})
    return found


def unplaced_books(*, earned: Revenue, placed: set[str]) -> list[PoolBooks]:
    """A row per GPU class (by name) of what was invoiced on no pool of ``placed``: a class
    with no pool (``revenue.NO_POOL``), or a pool no longer listed; no hours, no cost."""
    by_class = earned.unplaced(placed)
    names = dict(GpuClass.objects.filter(pk__in=list(by_class)).values_list("pk", "name"))
    return [
        PoolBooks(
            pool=None,
            gpu_class_name=names.get(gpu_class, ""),
            hours=dict.fromkeys(CATEGORIES, Decimal(0)),
            cost=Decimal(0),
            revenue=amount,
            revenue_drafts=earned.drafts,
        )
        for gpu_class, amount in sorted(by_class.items(), key=lambda i: names.get(i[0], ""))
    ]


def measured_watts(*, starts_at: datetime, ends_at: datetime) -> dict[str, Decimal]:
    """The nodes' power draw per GPU over the period from the portal's Prometheus, if any."""
    url = settings.PORTAL_PROMETHEUS_URL
    return costing.measured_watts(
        metrics=PrometheusClient(url=url) if url else None, starts_at=starts_at, ends_at=ends_at
    )


def pool_books(
    *,
    pool: NodePool,
    starts_at: datetime,
    ends_at: datetime,
    watts: dict[str, Decimal],
    earned: Revenue,
) -> PoolBooks:
    allocation = pool_allocation(pool=pool, starts_at=starts_at, ends_at=ends_at)
    cost = pool_cost(pool=pool, starts_at=starts_at, ends_at=ends_at, watts=watts)
    return PoolBooks(
        pool=pool,
        gpu_class_name=pool.gpu_class_name,
        hours={name: gpu_hours(allocation.totals[name]) for name in CATEGORIES},
        cost=to_cents(cost),
        revenue=earned.of_pool(pool.name),
        revenue_drafts=earned.drafts,
        idle_reservations=_idle_reservations(allocation),
        idle_guarantees=_idle_guarantees(allocation),
        on_demand=_on_demand(allocation),
    )


def pool_cost(
    *, pool: NodePool, starts_at: datetime, ends_at: datetime, watts: dict[str, Decimal]
) -> Decimal:
    """What the pool's nodes cost over [starts_at, ends_at) (``costing.nodes_cost``)."""
    spans = scheduling_selectors.node_availability(
        starts_at=starts_at, ends_at=ends_at, pool=pool
    ).select_related("node")
    versions = list(CostModel.objects.filter(pool=pool, effective_from__lt=ends_at))
    return costing.nodes_cost(
        spans=spans, versions=versions, starts_at=starts_at, ends_at=ends_at, watts=watts
    )


def _on_demand(allocation: Allocation) -> list[dict]:
    """The on-demand use of the pool by organization, project and tier, the most first."""
    keys = [key for key, amount in allocation.on_demand.items() if amount > 0]
    organizations = Organization.objects.in_bulk({key[0] for key in keys})
    projects = Project.objects.in_bulk({key[1] for key in keys})
    tiers = PriorityTier.objects.in_bulk({key[2] for key in keys if key[2] is not None})
    return [
        {
            "organization": organizations[organization],
            "project": projects.get(project),
            "tier": tiers.get(tier),
            "gpu_hours": gpu_hours(allocation.on_demand[(organization, project, tier)]),
        }
        for organization, project, tier in sorted(keys, key=lambda k: -allocation.on_demand[k])
    ]


def _idle_reservations(allocation: Allocation) -> list[dict]:
    top = sorted(allocation.reservations.items(), key=lambda item: -item[1]["idle"])[:TOP]
    found = Reservation.objects.select_related("organization", "project").in_bulk(
        [key for key, _ in top]
    )
    return [
        {
            "reservation": found[key],
            "idle_hours": gpu_hours(parts["idle"]),
            "used_hours": gpu_hours(parts["used"]),
            "lent_hours": gpu_hours(parts["lent"]),
        }
        for key, parts in top
        if parts["idle"] > 0 and found.get(key)
    ]


def _idle_guarantees(allocation: Allocation) -> list[dict]:
    top = sorted(allocation.guarantees.items(), key=lambda item: -item[1])[:TOP]
    organizations = Organization.objects.in_bulk([owner[0] for owner, _ in top])
    projects = Project.objects.in_bulk([owner[1] for owner, _ in top if owner[1]])
    return [
        {
            "organization": organizations[owner[0]],
            "project": projects.get(owner[1]),
            "idle_hours": gpu_hours(amount),
        }
        for owner, amount in top
        if amount > 0
    ]
