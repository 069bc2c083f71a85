"""The demo shows every commercial page filled: a priced catalog, reservations next week (GPUs
and MIG instances), a quota request waiting for an operator, an order fulfilled, and a
cancellation charged."""

import io

import pytest
from django.core.management import call_command

from billing.models import (
    CancellationCharge,
    CatalogItem,
    Invoice,
    Order,
    UsageReconciliation,
)
from scheduling.models import QuotaRequest, Reservation

pytestmark = pytest.mark.django_db


def test_the_demo_has_a_priced_catalog_a_reservation_a_pending_request_and_a_fulfilled_order():
    call_command("seed_demo", stdout=io.StringIO())
    assert (
        CatalogItem.objects.filter(prices__isnull=False).distinct().count(),
        sorted(Reservation.objects.values_list("gpu_class__name", "mig_profile", "state")),
        list(QuotaRequest.objects.values_list("state", flat=True)),
        list(Order.objects.values_list("state", flat=True)),
    ) == (
        15,
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
    assert (Invoice.objects.count(), UsageReconciliation.objects.count()) == (1, 1)
