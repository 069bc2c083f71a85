"""The demo shows every commercial page filled: a priced catalog, reservations next week (GPUs
and MIG instances), a quota request waiting for an operator, an order fulfilled, and a
cancellation charged."""

import io

import pytest
from django.core.management import call_command

from billing import services as billing
from billing.models import (
    BillingRecord,
    CancellationCharge,
    CatalogItem,
    Invoice,
    Order,
    UsageReconciliation,
)
from billing.selectors import resources_unpriced, usage_unpriced
from portal import clock
from scheduling import services
from scheduling.backends import get_backend
from scheduling.models import QuotaRequest, Reservation, Workload
from tenants.models import Project

pytestmark = pytest.mark.django_db


def test_the_demo_has_a_priced_catalog_a_reservation_a_pending_request_and_a_fulfilled_order():
    call_command("seed_demo", stdout=io.StringIO())
    assert (
        CatalogItem.objects.filter(prices__isnull=False).distinct().count(),
        sorted(Reservation.objects.values_list("gpu_class__name", "mig_profile", "state")),
        list(QuotaRequest.objects.values_list("state", flat=True)),
        list(Order.objects.values_list("state", flat=True)),
    ) == (
        23,
        [
            ("A100-80GB", "", "approved"),
            ("A100-80GB", "mig-1g.10gb", "approved"),
            ("H100-80GB", "", "approved"),
            ("H100-80GB", "", "cancelled"),
            ("L4", "", "requested"),
        ],
        ["requested"],
        ["fulfilled"],
    )


def test_the_demos_cancelled_reservation_is_charged_half_its_price():
    call_command("seed_demo", stdout=io.StringIO())
    charge = CancellationCharge.objects.get()
    assert (charge.percent, charge.amount) == (50, charge.remaining_value / 2)


def test_the_demo_has_an_invoice_draft_and_a_metering_comparison():
    call_command("seed_demo", stdout=io.StringIO())
    # acme's of this month (the recorded history gives its other organizations theirs, and
    # may reach into the last month).
    this_month = clock.now().date().replace(day=1)
    drafts = Invoice.objects.filter(
        organization__slug="acme", state=Invoice.State.DRAFT, month=this_month
    )
    assert (drafts.count(), UsageReconciliation.objects.count()) == (1, 1)


def test_the_demo_prices_every_resource_its_cluster_offers():
    call_command("seed_demo", stdout=io.StringIO())
    assert resources_unpriced(at=clock.now()) == []


def test_the_demo_prices_a_mig_instance_at_its_share_of_the_gpu():
    call_command("seed_demo", stdout=io.StringIO())
    prices = {
        item.slug: str(item.prices.get().unit_price)
        for item in CatalogItem.objects.filter(
            gpu_class__name="A100-80GB", kind="on_demand"
        ).exclude(tier__isnull=False)
    }
    assert prices == {
        "a100-80gb-on-demand": "1.8000",
        "a100-80gb-mig-1g-10gb-on-demand": "0.2571",  # 1/7 of the GPU's compute
        "a100-80gb-mig-3g-40gb-on-demand": "0.7714",  # 3/7
    }


def test_the_demos_mig_notebook_is_billed_at_a_price(django_capture_on_commit_callbacks):
    call_command("seed_demo", stdout=io.StringIO())
    backend = get_backend()
    for project in Project.objects.filter(organization__slug="acme"):  # as the worker does
        services.project_provision(project_id=project.pk, backend=backend)
    with django_capture_on_commit_callbacks(execute=True):
        result = services.scheduling_cycle_run()
    for workload_id in result.admitted:
        services.workload_launch(workload_id=workload_id, backend=backend)
    for seconds in (60, 3600):
        clock.advance(seconds=seconds)
        services.workloads_sync(backend=backend)
    billing.usage_meter(now=clock.now())
    notebook = Workload.objects.get(name="bob-notebook")
    records = BillingRecord.objects.filter(interval__workload=notebook)
    assert (
        records.exists(),
        records.filter(unit_price__isnull=True).exists(),
        usage_unpriced(),
    ) == (True, False, [])
