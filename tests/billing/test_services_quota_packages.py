"""A quota package counts for exactly the period it was sold for: the scheduling cycle sees its
GPUs from the period's start, not from the order's approval, and no longer from its end."""

from datetime import timedelta
from decimal import Decimal

import pytest

from billing import selectors, services
from billing.models import Order
from billing.pricing import month_of
from billing.services import OrderRequest
from portal import clock
from scheduling import services as scheduling
from scheduling.models import GpuClass, QuotaGrant, QuotaRequest, Workload
from tenants.permissions import Caller

pytestmark = pytest.mark.django_db

MONTH = timedelta(days=30)


@pytest.fixture
def package(offer, cluster, acme):
    """8 H100 a month at 10,000; acme holds 8 H100 of its own."""
    QuotaGrant.objects.create(
        organization=acme, gpu_class=GpuClass.objects.get(name="H100-80GB"), guarantee=8, limit=8
    )
    return offer(slug="h100-package", kind="quota_package", quantity=8, price="10000")


def fulfilled(alice, acme, operator, *, starts_at) -> Order:
    """An order of one package for a month from ``starts_at``, approved and fulfilled now."""
    made = services.order_create(
        caller=Caller(user=alice),
        organization=acme,
        request=OrderRequest(
            item="h100-package", quantity=1, starts_at=starts_at, ends_at=starts_at + MONTH
        ),
    )
    services.order_approve(caller=Caller(user=operator), order=made)
    return services.order_fulfil(order_id=str(made.pk))


@pytest.fixture
def bought(package, alice, acme, operator):
    """An order of the package for a month from an hour from now, approved and fulfilled at
    once (before its period)."""
    return fulfilled(alice, acme, operator, starts_at=clock.now() + timedelta(hours=1))


def sixteen_gpus(mia, ai_dev) -> Workload:
    return scheduling.workload_submit(
        caller=Caller(user=mia),
        project=ai_dev,
        request=scheduling.WorkloadRequest(
            name="train",
            kind="training",
            tier="training",
            image="nvcr.io/nvidia/pytorch:25.01-py3",
            gpu_classes=("H100-80GB",),
            gpus=8,
            replicas=2,
        ),
    )


def until(moment) -> None:
    """Move the clock to ``moment``."""
    clock.advance(seconds=(moment - clock.now()).total_seconds())


def h100(acme) -> tuple[int, int]:
    grant = QuotaGrant.objects.get(organization=acme, gpu_class__name="H100-80GB")
    return grant.guarantee, grant.limit


def test_a_package_approved_before_its_period_does_not_count_before_it_starts(
    bought, acme, mia, ai_dev
):
    workload = sixteen_gpus(mia, ai_dev)
    scheduling.scheduling_cycle_run()
    workload.refresh_from_db()
    assert (bought.state, h100(acme), workload.state) == (
        Order.State.FULFILLED,
        (8, 8),
        Workload.State.PENDING,
    )


def test_the_cycle_counts_a_package_from_the_start_of_its_period(bought, acme, mia, ai_dev):
    workload = sixteen_gpus(mia, ai_dev)
    until(bought.starts_at)
    scheduling.scheduling_cycle_run()
    workload.refresh_from_db()
    assert (h100(acme), workload.state) == ((16, 16), Workload.State.ADMITTED)


def test_the_cycle_no_longer_counts_a_package_from_the_end_of_its_period(bought, acme):
    until(bought.starts_at)
    scheduling.scheduling_cycle_run()
    until(bought.ends_at)
    scheduling.scheduling_cycle_run()
    taken_back = QuotaRequest.objects.get(grant__organization=acme)
    assert (h100(acme), taken_back.state) == ((8, 8), QuotaRequest.State.REVERTED)


def test_packages_ending_together_are_all_taken_back(package, alice, acme, operator):
    start = clock.now() + timedelta(hours=1)
    first, _ = (fulfilled(alice, acme, operator, starts_at=start) for _ in range(2))
    until(first.starts_at)
    scheduling.scheduling_cycle_run()
    both = h100(acme)
    until(first.ends_at)
    scheduling.scheduling_cycle_run()
    assert (both, h100(acme)) == ((24, 24), (8, 8))


def test_a_package_is_billed_for_the_months_of_its_period(bought, acme):
    charges = selectors.package_charges(
        organization_id=acme.pk, starts_at=bought.starts_at - MONTH, ends_at=bought.ends_at + MONTH
    )
    assert [(c.starts_at, c.amount) for c in charges] == [(bought.starts_at, Decimal("10000.00"))]


def test_the_quotas_page_says_from_when_a_package_bought_ahead_counts(bought, alice, client):
    client.force_login(alice)
    page = client.get("/orgs/acme/quotas/").content.decode()
    assert f"counts from {bought.starts_at:%Y-%m-%d %H:%M} UTC" in page


def test_a_package_approved_after_its_months_invoice_was_issued_is_billed_on_the_next(
    package, alice, acme, operator
):
    """Its first month began in December, whose invoice was issued before the operator
    approved it: the month is billed on January's invoice, not on none."""
    _, december_end = month_of(clock.now())
    starts_at = december_end - timedelta(hours=2)
    made = services.order_create(
        caller=Caller(user=alice),
        organization=acme,
        request=OrderRequest(
            item="h100-package", quantity=1, starts_at=starts_at, ends_at=starts_at + MONTH
        ),
    )
    until(december_end + timedelta(days=3))
    december = services.invoice_draft(organization=acme, year=starts_at.year, month=starts_at.month)
    services.invoice_issue(caller=Caller(user=operator), invoice=december)
    services.order_approve(caller=Caller(user=operator), order=made)
    services.order_fulfil(order_id=str(made.pk))
    january = services.invoice_draft(
        organization=acme, year=december_end.year, month=december_end.month
    )
    assert (december.subtotal, january.subtotal) == (Decimal("0.00"), Decimal("10000.00"))
