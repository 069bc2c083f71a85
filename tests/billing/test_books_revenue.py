"""The books' revenue is the invoices': per pool, class and organization, read off the month's
invoice lines (credits subtracted, at each price in force) and split among the pools to the
cent, so that the pools' revenue adds up to the invoices' subtotals exactly."""

from datetime import timedelta
from decimal import Decimal

import pytest

from billing import services
from billing.models import Invoice
from billing.pricing import month_bounds
from billing.selectors import books
from billing.selectors.revenue import revenue
from billing.services import OrderRequest
from scheduling.models import GpuClass, NodePool
from tenants.permissions import Caller

from ..factories import ProjectFactory
from .conftest import MONTH, YEAR, at, evicted, ran

pytestmark = pytest.mark.django_db


@pytest.fixture
def month_invoiced(on_demand, offer, operator, acme, globex, vision):
    """Acme's H100 work across a price change with lost work credited, and MIG instances;
    globex's H100 work in a project of its own: drafted for the month."""
    offer(
        slug="a100-1g",
        price="0.4100",
        gpu_class=GpuClass.objects.get(name="A100-80GB"),
        mig_profile="mig-1g.10gb",
    )
    services.price_version_add(
        caller=Caller(user=operator),
        item=on_demand,
        unit_price=Decimal("3.1300"),
        effective_from=at(2.25),
    )
    evicted(ran(vision, start=1, gpus=3, name="ft"), when=3.4, since=2.1)
    ran(vision, start=0.3, end=2.7, mig=("mig-1g.10gb", 3), name="nb")
    ran(ProjectFactory(organization=globex), start=0.1, end=4.05, gpus=5, name="batch")
    services.usage_meter(now=at(24))
    services.invoices_draft_month(year=YEAR, month=MONTH)


def test_the_books_revenue_of_a_month_is_its_invoices_subtotals_to_the_cent(month_invoiced):
    starts_at, ends_at = month_bounds(YEAR, MONTH)
    invoices = Invoice.objects.filter(month__year=YEAR, month__month=MONTH)
    invoiced = sum((i.subtotal for i in invoices), Decimal(0))

    pools = books(starts_at=starts_at, ends_at=ends_at, watts={})

    assert invoices.count() == 2
    assert sum((pool.revenue for pool in pools), Decimal(0)) == invoiced


def test_each_organizations_revenue_is_its_invoice(month_invoiced, acme, globex):
    starts_at, ends_at = month_bounds(YEAR, MONTH)

    earned = revenue(starts_at=starts_at, ends_at=ends_at)

    for organization in (acme, globex):
        invoice = Invoice.objects.get(organization=organization, month__month=MONTH)
        assert (
            sum(
                (a for (_, _, org), a in earned.amounts.items() if org == organization.pk),
                Decimal(0),
            )
            == invoice.subtotal
        )


def test_the_credit_is_subtracted_from_the_pool_the_work_ran_on(month_invoiced, acme):
    starts_at, ends_at = month_bounds(YEAR, MONTH)
    invoice = Invoice.objects.get(organization=acme, month__month=MONTH)
    credited = -sum(
        (line.amount for line in invoice.lines.filter(charge="lost_work_credit")), Decimal(0)
    )
    charged = sum(
        (line.amount for line in invoice.lines.filter(gpu_class__name="H100-80GB", amount__gt=0)),
        Decimal(0),
    )

    earned = revenue(starts_at=starts_at, ends_at=ends_at)

    assert credited > 0
    assert earned.by_organization("dgx-h100")[acme.pk] == charged - credited


def test_the_books_say_drafts_were_read(month_invoiced):
    starts_at, ends_at = month_bounds(YEAR, MONTH)

    assert revenue(starts_at=starts_at, ends_at=ends_at).drafts == 2


@pytest.fixture
def retired_class_invoiced(offer, on_demand, acme, alice, operator, vision):
    """Acme's H100 work, and a month of a quota package of L4s, drafted for the month after
    the L4 pool's GPUs were replaced by another class's: L4 is a class with no pool left."""
    l4 = GpuClass.objects.get(name="L4")
    offer(slug="l4-package", kind="quota_package", gpu_class=l4, quantity=1, price="900")
    order = services.order_create(
        caller=Caller(user=alice),
        organization=acme,
        request=OrderRequest(
            item="l4-package", quantity=1, starts_at=at(1), ends_at=at(1) + timedelta(days=30)
        ),
    )
    services.order_approve(caller=Caller(user=operator), order=order)
    services.order_fulfil(order_id=str(order.pk))
    ran(vision, start=1, end=3, gpus=2)
    services.usage_meter(now=at(24))
    NodePool.objects.filter(gpu_class=l4).update(
        gpu_class=GpuClass.objects.create(name="L40S", memory_gib=48)
    )
    services.invoices_draft_month(year=YEAR, month=MONTH)


def test_a_class_with_no_pool_has_its_revenue_on_a_row_of_its_own(retired_class_invoiced):
    starts_at, ends_at = month_bounds(YEAR, MONTH)
    [invoice] = Invoice.objects.filter(month__year=YEAR, month__month=MONTH)

    rows = books(starts_at=starts_at, ends_at=ends_at, watts={})

    [unplaced] = [row for row in rows if row.pool is None]
    assert (unplaced.gpu_class_name, unplaced.revenue) == ("L4", Decimal("900.00"))
    assert (unplaced.total_hours, unplaced.cost) == (0, 0)
    assert sum((row.revenue for row in rows), Decimal(0)) == invoice.subtotal
