"""The demo shows every commercial page filled: a priced catalog, a reservation next week,
a quota request waiting for an operator, and an order fulfilled."""

import io

import pytest
from django.core.management import call_command

from billing.models import CatalogItem, Order
from scheduling.models import QuotaRequest, Reservation

pytestmark = pytest.mark.django_db


def test_the_demo_has_a_priced_catalog_a_reservation_a_pending_request_and_a_fulfilled_order():
    call_command("seed_demo", stdout=io.StringIO())
    assert (
        CatalogItem.objects.filter(prices__isnull=False).distinct().count(),
        sorted(Reservation.objects.values_list("gpu_class__name", "state")),
        list(QuotaRequest.objects.values_list("state", flat=True)),
        list(Order.objects.values_list("state", flat=True)),
    ) == (
        15,
        [("A100-80GB", "approved"), ("H100-80GB", "approved"), ("L4", "requested")],
        ["requested"],
        ["fulfilled"],
    )
