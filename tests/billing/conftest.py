from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from billing import services
from billing.models import BillingRecord, CatalogItem, Credit, Invoice, Order
from billing.services import OrderRequest
from portal import clock
from scheduling import services as scheduling
from scheduling.backends import simulated_backend
from scheduling.models import (
    Eviction,
    GpuClass,
    Node,
    Placement,
    PriorityTier,
    QuotaGrant,
    Reservation,
    Workload,
)
from tenants.permissions import Caller

from ..factories import ProjectFactory, UserFactory


@pytest.fixture
def operator(db):
    return UserFactory(email="ops@example.com", is_staff=True)


@pytest.fixture
def finance(client):
    """An operator signed in to admin."""
    client.force_login(UserFactory(email="finance@example.com", is_staff=True, is_superuser=True))
    return client


@pytest.fixture
def h100(db):
    scheduling.cluster_description_apply(path=Path(settings.PORTAL_SIMULATED_CLUSTER))
    return GpuClass.objects.get(name="H100-80GB")


@pytest.fixture
def cluster(h100):
    """The demo's simulated nodes, whose GPUs reservations hold."""
    description = Path(settings.PORTAL_SIMULATED_CLUSTER)
    scheduling.inventory_sync(backend=simulated_backend(description_path=description))


@pytest.fixture
def offer(operator, h100):
    """An item of the catalog, priced from now on; keyword arguments override its fields."""

    def make(slug="h100-on-demand", price="2.9000", **fields) -> CatalogItem:
        item = services.catalog_item_save(
            caller=Caller(user=operator),
            item=CatalogItem(
                slug=slug,
                name=fields.pop("name", slug),
                kind=fields.pop("kind", "on_demand"),
                gpu_class=fields.pop("gpu_class", h100),
                active_from=fields.pop("active_from", clock.now() - timedelta(days=1)),
                **fields,
            ),
        )
        services.price_version_add(
            caller=Caller(user=operator),
            item=item,
            unit_price=Decimal(price),
        )
        return item

    return make


@pytest.fixture
def vision(acme):
    """A project of acme's besides the demo's."""
    return ProjectFactory(organization=acme, slug="vision")


@pytest.fixture
def on_demand(offer, cluster):
    """H100 on demand at 2.9000 per GPU-hour, for every tier."""
    return offer(slug="h100-on-demand", kind="on_demand", price="2.9000")


# Usage: placements that ran, metered into records, drafted into invoices. Tomorrow at
# midnight UTC: after the prices the fixtures add, which start now.
DAY = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)


def at(hours: float):
    return DAY + timedelta(hours=hours)


def ran(project, *, start, end=None, gpus=8, gpu_milli=0, mig=None, tier="training", name="w"):
    """A workload of ``project`` whose one placement ran from ``start`` (hours after DAY) to
    ``end`` (None: still running)."""
    gpu_class = GpuClass.objects.get(name="A100-80GB" if mig else "H100-80GB")
    workload = Workload.objects.create(
        project=project,
        name=name,
        kind="training",
        tier=PriorityTier.objects.get(name=tier),
        gpu_classes=[gpu_class.name],
        gpus=0 if (gpu_milli or mig) else gpus,
        gpu_milli=gpu_milli,
        mig_profile=mig[0] if mig else "",
        mig_count=mig[1] if mig else 0,
        image="pytorch:latest",
        state=Workload.State.RUNNING if end is None else Workload.State.SUCCEEDED,
        gpu_class=gpu_class,
    )
    node = Node.objects.filter(pool__gpu_class=gpu_class).order_by("name").first()
    return Placement.objects.create(
        workload=workload,
        replica=0,
        node=node,
        gpu_indices=list(range(gpus)) if not (gpu_milli or mig) else [0],
        gpu_milli=gpu_milli or 1000,
        mig_profile=mig[0] if mig else "",
        mig_count=mig[1] if mig else 0,
        started_at=at(start) - timedelta(minutes=1),
        running_at=at(start),
        ended_at=None if end is None else at(end),
    )


YEAR, MONTH = DAY.year, DAY.month


def evicted(placement, *, when: float, since: float, reason="priority", by=None) -> Eviction:
    """The eviction scheduling records when ``placement``'s workload is preempted at ``when``
    (hours after DAY), having lost the work since ``since``."""
    Placement.objects.filter(pk=placement.pk).update(ended_at=at(when))
    return Eviction.objects.create(
        workload=placement.workload,
        at=at(when),
        reason=reason,
        preempted_by=by,
        notice_seconds=30,
        gpu_class=placement.workload.gpu_class,
        lost_since=at(since),
        requeued=True,
    )


@pytest.fixture
def lost_work_invoice(on_demand, acme, vision):
    """Acme's draft: 8 H100s for 2.5 hours (58.00), evicted with 1.5 hours lost (34.80
    credited)."""
    evicted(ran(vision, start=1, gpus=8, name="llama-ft"), when=3.5, since=2)
    services.usage_meter(now=at(24))
    return draft(acme)


def metered(*runs):
    """Run each (project, fields) and meter them."""
    for project, fields in runs:
        ran(project, **fields)
    services.usage_meter(now=at(24 * 3))


def draft(organization) -> Invoice:
    return services.invoice_draft(organization=organization, year=YEAR, month=MONTH)


def rated(project, *, starts_at, cost: str) -> BillingRecord:
    """A record of an hour of one H100 of ``project`` from ``starts_at`` that cost ``cost``
    (of an interval long gone: the record keeps its id, not a link)."""
    return BillingRecord.objects.create(
        interval_id=10**9 + BillingRecord.objects.count(),
        organization=project.organization,
        project=project,
        gpu_class=GpuClass.objects.get(name="H100-80GB"),
        resource="gpus",
        starts_at=starts_at,
        ends_at=starts_at + timedelta(hours=1),
        quantity_seconds=Decimal(3600),
        unit_price=Decimal(cost),
        cost=Decimal(cost),
    )


def period_over(invoice: Invoice) -> None:
    """Move the simulated clock past the end of the invoice's period: only then is it issued."""
    left = (invoice.period_end - clock.now()).total_seconds()
    if left >= 0:
        clock.advance(seconds=left + 60)


# Orders, and reservations asked for directly.


def tomorrow(hour_offset: float = 0):
    return clock.now().replace(minute=0, second=0, microsecond=0) + timedelta(
        days=1, hours=hour_offset
    )


def order(
    user, organization, item="h100-reserved", *, quantity=8, hours=4, submit=True, **fields
) -> Order:
    return services.order_create(
        caller=Caller(user=user),
        organization=organization,
        request=OrderRequest(
            item=item,
            quantity=quantity,
            starts_at=fields.pop("starts_at", tomorrow()),
            ends_at=fields.pop("ends_at", tomorrow(hours)),
            **fields,
        ),
        submit=submit,
    )


def approved(user, organization, operator, **fields) -> Order:
    return services.order_approve(
        caller=Caller(user=operator), order=order(user, organization, **fields)
    )


def hold(user, organization, gpus):
    """A reservation request for the same window as the orders, made directly."""
    return scheduling.reservations_request(
        caller=Caller(user=user),
        organization=organization,
        request=scheduling.ReservationRequest(
            gpu_class="H100-80GB",
            gpus=gpus,
            starts_at=tomorrow(),
            ends_at=tomorrow(4),
            pool="dgx-h100",
        ),
    )


@pytest.fixture
def reserved(offer, cluster):
    """Reserved H100-hours at 2.4650 (list price), free cancellation until 24 h before the
    window, then 50%."""
    return offer(slug="h100-reserved", kind="reservation", price="2.4650")


def start_in(hours: float):
    return clock.now().replace(microsecond=0) + timedelta(hours=hours)


def reservation(user, organization, *, starts_in: float = 48, hours: int = 4, gpus: int = 8):
    [held] = scheduling.reservations_request(
        caller=Caller(user=user),
        organization=organization,
        request=scheduling.ReservationRequest(
            gpu_class="H100-80GB",
            gpus=gpus,
            starts_at=start_in(starts_in),
            ends_at=start_in(starts_in + hours),
            pool="dgx-h100",
        ),
    )
    return held


def cancelled(user, held: Reservation) -> Reservation:
    return scheduling.reservation_cancel(caller=Caller(user=user), reservation=held)


# Spend: budgets and the usage they count.


def hours_ago(hours: float) -> float:
    """``ran``'s hours (after tomorrow's midnight) for a moment ``hours`` before now."""
    return (clock.now() - DAY) / timedelta(hours=1) - hours


def spent_today(project, euros_of_h100_hours: int) -> None:
    """8 H100s (23.20 an hour) over the hours before now, metered: 23.20 x hours."""
    now = hours_ago(0)  # read once: two reads would lengthen the run by the time between
    ran(project, start=now - euros_of_h100_hours - 0.5, end=now - 0.5)
    services.usage_meter()


def budget(alice, acme, amount, **fields):
    return services.budget_save(
        caller=Caller(user=alice),
        organization=acme,
        project=fields.pop("project", None),
        monthly_amount=Decimal(amount),
        **fields,
    )


@pytest.fixture
def mid_month(on_demand, offer):
    """Noon on the 15th of next month, once the prices (on demand, and reserved H100-hours at
    2.4650) are added: spend of the hours before now stays in one month and one day, at the
    prices in force."""
    offer(slug="h100-reserved", kind="reservation", price="2.4650")
    now = clock.now()
    first = now.replace(day=1, hour=12, minute=0, second=0, microsecond=0) + timedelta(days=32)
    clock.advance(seconds=(first.replace(day=15) - now).total_seconds())


def cancelled_h100_reservation(alice, acme) -> None:
    """Eight H100 for two hours, six hours ahead, cancelled: a 19.72 charge."""
    start = clock.now() + timedelta(hours=6)
    [held] = scheduling.reservations_request(
        caller=Caller(user=alice),
        organization=acme,
        request=scheduling.ReservationRequest(
            gpu_class="H100-80GB", gpus=8, starts_at=start, ends_at=start + timedelta(hours=2)
        ),
    )
    scheduling.reservation_cancel(caller=Caller(user=alice), reservation=held)
    services.cancellation_charge_record(reservation_id=str(held.pk))


@pytest.fixture
def invoice(on_demand, acme, vision):
    metered((vision, {"start": 1, "end": 3}))
    return draft(acme)


@pytest.fixture
def mixed(on_demand, vision):
    """This month: 8 H100s for an hour, and 2 mig-1g.10gb instances for an hour, rated."""
    now = hours_ago(0)  # read once: two reads would lengthen the runs by the time between
    ran(vision, start=now - 1.5, end=now - 0.5)
    ran(vision, start=now - 1.5, end=now - 0.5, mig=("mig-1g.10gb", 2), name="nb")
    services.usage_meter()


@pytest.fixture
def half_cents(on_demand, acme, vision):
    """Two projects' lines of 0.725 each: 0.73 twice on the invoice (1.45 rounded once)."""
    web = ProjectFactory(organization=acme, slug="web")
    metered(
        (vision, {"start": 1, "end": 2, "gpu_milli": 250}),
        (web, {"start": 1, "end": 2, "gpu_milli": 250, "name": "other"}),
    )
    clock.advance(seconds=(at(3) - clock.now()).total_seconds())


@pytest.fixture
def used_this_month(on_demand, vision):
    """46.40 of use by acme this month."""
    metered((vision, {"start": 1, "end": 3}))


def suspend(organization, operator) -> None:
    from tenants import services as tenancy

    tenancy.organization_suspend(caller=Caller(user=operator), organization=organization)


@pytest.fixture
def mig_ran(on_demand, vision):
    """Two mig-1g.10gb instances of vision's for an hour, rated: H100 is priced, MIG not."""
    ran(vision, start=1, end=2, mig=("mig-1g.10gb", 2))
    services.usage_meter(now=at(3))


@pytest.fixture
def held_draft(mig_ran, acme):
    """The month's draft, its month over (only then is it issued)."""
    invoice = services.invoice_draft(organization=acme, year=DAY.year, month=DAY.month)
    period_over(invoice)
    return invoice


@pytest.fixture
def two_line_invoice(on_demand, acme, vision):
    metered((vision, {"start": 1, "end": 3}), (vision, {"start": 4, "end": 5, "name": "second"}))
    return draft(acme)


def granted(organization, operator, amount: str) -> Credit:
    return services.credit_grant(
        caller=Caller(user=operator),
        organization=organization,
        amount=Decimal(amount),
        reason="Outage of 2026-11-03",
    )


def issue(invoice, operator) -> Invoice:
    period_over(invoice)
    return services.invoice_issue(caller=Caller(user=operator), invoice=invoice)


def guaranteed(organization, gpu_class, guarantee: int, *, since, **fields) -> QuotaGrant:
    """A grant of ``guarantee`` (its limit too), in force since ``since`` in its history, as
    the quota services record it."""
    grant = QuotaGrant.objects.create(
        organization=organization,
        gpu_class=gpu_class,
        guarantee=guarantee,
        limit=guarantee,
        **fields,
    )
    scheduling.quota_grant_history_record(grant=grant, now=since)
    return grant
