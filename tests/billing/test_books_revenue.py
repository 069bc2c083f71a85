"""The books' revenue is the invoices': per pool, class and organization, read off the month's
invoice lines (credits subtracted, at each price in force) and split among the pools to the
cent, so that the pools' revenue adds up to the invoices' subtotals exactly."""

from decimal import Decimal

import pytest

from billing import services
from billing.models import Invoice
from billing.pricing import month_bounds
from billing.selectors import books
from billing.selectors.revenue import revenue
from scheduling.models import GpuClass
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
