"""Billing's events become deliveries: an invoice issued, an order decided (with its money:
webhooks are the owners' and admins'), a budget's threshold crossed."""

import pytest

from billing import services as billing
from tenants.permissions import Caller
from webhooks.models import EventType

from ..billing import conftest as billing_fixtures
from ..billing.conftest import budget, draft, metered, order, period_over, spent_today
from .conftest import data_of

pytestmark = pytest.mark.django_db

# Billing's catalog, prices and the demo's cluster, as billing's tests have them.
cluster, h100, offer = billing_fixtures.cluster, billing_fixtures.h100, billing_fixtures.offer
on_demand, operator = billing_fixtures.on_demand, billing_fixtures.operator
mid_month, reserved, vision = (
    billing_fixtures.mid_month,
    billing_fixtures.reserved,
    billing_fixtures.vision,
)
HOOK = "https://1.1.1.1/hook"


def test_an_issued_invoice_is_delivered_with_its_number_and_total(
    register, on_demand, acme, vision, operator, deliveries_of
):
    register(HOOK, event_types=[EventType.INVOICE_ISSUED])
    metered((vision, {"start": 1, "end": 3}))
    invoice = draft(acme)
    period_over(invoice)
    [delivery] = deliveries_of(
        lambda: billing.invoice_issue(caller=Caller(user=operator), invoice=invoice)
    )
    invoice.refresh_from_db()
    data = data_of(delivery)
    assert (delivery.event_type, data["number"], data["total"], data["state"]) == (
        "invoice.issued",
        invoice.number,
        str(invoice.total),
        "issued",
    )


def test_a_rejected_order_is_delivered_with_its_price(
    register, reserved, alice, acme, operator, deliveries_of
):
    register(HOOK, event_types=[EventType.ORDER_DECIDED])
    submitted = deliveries_of(lambda: order(alice, acme))
    [rejected] = deliveries_of(
        lambda: billing.order_reject(
            caller=Caller(user=operator), order=submitted_order(acme), reason="No capacity."
        )
    )
    data = data_of(rejected)
    assert (submitted, data["state"], data["unit_price"]) == ([], "rejected", "2.4650")


def submitted_order(acme):
    from billing.models import Order

    return Order.objects.get(organization=acme)


def test_a_budget_threshold_crossed_is_delivered_with_the_threshold(
    register, mid_month, alice, acme, vision, deliveries_of
):
    register(HOOK, event_types=[EventType.BUDGET_THRESHOLD_CROSSED])
    budget(alice, acme, "100", thresholds=[50])
    spent_today(vision, 3)
    [crossed] = deliveries_of(billing.budgets_check)
    data = data_of(crossed)
    assert (crossed.event_type, data["threshold"], data["spent"], data["monthly_amount"]) == (
        "budget.threshold_crossed",
        50,
        "69.60",
        "100.00",
    )
