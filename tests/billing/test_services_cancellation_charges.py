"""Cancelling a reservation costs what its catalog item's terms say (free until
``free_cancellation_hours`` before the window, then ``cancellation_charge_percent`` of the price
of what is left of it), recorded once per reservation for invoices to read."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import IntegrityError

from billing import selectors, services, tasks
from billing.models import CancellationCharge
from portal import clock
from scheduling.models import Reservation
from tenants.models import AuditEvent
from tenants.permissions import Caller

from .conftest import approved, cancelled, reservation

pytestmark = pytest.mark.django_db


def test_cancelling_before_the_free_period_ends_costs_nothing(reserved, alice, acme):
    held = reservation(alice, acme, starts_in=48)
    charge = services.cancellation_charge_record(reservation_id=str(cancelled(alice, held).pk))
    assert (charge.amount, charge.explanation.startswith("Free")) == (Decimal("0.00"), True)


def test_cancelling_within_the_terms_hours_costs_their_share_of_the_window(reserved, alice, acme):
    held = reservation(alice, acme, starts_in=10)  # 8 GPUs x 4 h x 2.4650 = 78.88
    charge = services.cancellation_charge_record(reservation_id=str(cancelled(alice, held).pk))
    assert (charge.remaining_value, charge.percent, charge.amount) == (
        Decimal("78.88"),
        50,
        Decimal("39.44"),
    )


def test_an_open_window_cancelled_is_charged_on_what_is_left_of_it(reserved, alice, acme):
    held = reservation(alice, acme, starts_in=10)
    quote = selectors.cancellation_quote(reservation=held, at=held.starts_at + timedelta(hours=1))
    assert (quote.remaining_value, quote.amount) == (Decimal("59.16"), Decimal("29.58"))


def test_a_reservation_bought_by_an_order_is_charged_on_the_orders_total(
    offer, cluster, alice, acme, operator
):
    offer(
        slug="h100-pool",
        kind="dedicated_pool",
        price="50000",
        free_cancellation_hours=24 * 7,
        cancellation_charge_percent=20,
    )
    made = approved(
        alice, acme, operator, item="h100-pool", quantity=1, hours=24 * 30, pool="dgx-h100"
    )
    services.order_fulfil(order_id=str(made.pk))
    held = cancelled(alice, Reservation.objects.get())
    charge = services.cancellation_charge_record(reservation_id=str(held.pk))
    assert (charge.order_id, charge.amount) == (made.pk, Decimal("10000.00"))


def test_the_price_in_force_when_the_reservation_was_asked_for_applies(
    reserved, operator, alice, acme
):
    held = reservation(alice, acme, starts_in=10)
    services.price_version_add(caller=Caller(user=operator), item=reserved, unit_price=Decimal(9))
    charge = services.cancellation_charge_record(reservation_id=str(cancelled(alice, held).pk))
    assert charge.amount == Decimal("39.44")


def test_without_a_catalog_item_for_the_class_a_cancellation_costs_nothing(cluster, alice, acme):
    held = reservation(alice, acme, starts_in=1)
    charge = services.cancellation_charge_record(reservation_id=str(cancelled(alice, held).pk))
    assert (charge.amount, charge.item, "nothing to charge" in charge.explanation) == (
        Decimal("0.00"),
        None,
        True,
    )


def test_a_cancellation_is_charged_once_however_often_it_is_recorded(reserved, alice, acme):
    held = cancelled(alice, reservation(alice, acme, starts_in=10))
    first = services.cancellation_charge_record(reservation_id=str(held.pk))
    second = services.cancellation_charge_record(reservation_id=str(held.pk))
    assert (first.pk, CancellationCharge.objects.count()) == (second.pk, 1)


def test_the_database_refuses_a_second_charge_for_one_reservation(reserved, alice, acme):
    held = cancelled(alice, reservation(alice, acme, starts_in=10))
    charge = services.cancellation_charge_record(reservation_id=str(held.pk))
    charge.pk = None
    with pytest.raises(IntegrityError):
        charge.save(force_insert=True)


def test_a_charge_is_audited(reserved, alice, acme):
    held = cancelled(alice, reservation(alice, acme, starts_in=10))
    charge = services.cancellation_charge_record(reservation_id=str(held.pk))
    assert AuditEvent.objects.filter(
        action="reservation.cancellation_charge", target_id=str(charge.pk)
    ).exists()


def test_a_reservation_still_holding_is_not_charged(reserved, alice, acme):
    held = reservation(alice, acme, starts_in=10)
    assert services.cancellation_charge_record(reservation_id=str(held.pk)) is None


def test_cancelling_queues_the_charge(reserved, alice, acme, django_capture_on_commit_callbacks):
    held = reservation(alice, acme, starts_in=10)
    with django_capture_on_commit_callbacks() as callbacks:
        cancelled(alice, held)
    queued = [c.keywords for c in callbacks if c.func == tasks.cancellation_charge_record.delay]
    assert [q["reservation_id"] for q in queued] == [str(held.pk)]


def test_the_reconciler_charges_a_cancellation_whose_event_was_lost(reserved, alice, acme):
    cancelled(alice, reservation(alice, acme, starts_in=10))
    counts = services.billing_reconcile()
    assert (counts["charges_recorded"], CancellationCharge.objects.get().amount) == (
        1,
        Decimal("39.44"),
    )


def test_the_reconciler_fulfils_an_order_whose_task_was_lost(reserved, alice, acme, operator):
    made = approved(alice, acme, operator)
    counts = services.billing_reconcile(now=clock.now() + timedelta(minutes=5))
    made.refresh_from_db()
    assert (counts["orders_fulfilled"], made.state) == (1, "fulfilled")


def test_the_reconciler_leaves_an_order_just_approved_to_its_task(reserved, alice, acme, operator):
    made = approved(alice, acme, operator)
    services.billing_reconcile()
    made.refresh_from_db()
    assert made.state == "approved"


# The API: a quote before cancelling, the charge after, and the organization's list.

URL = "/api/v1/organizations/acme/reservations/{}/cancellation-charge/"
LIST = "/api/v1/organizations/acme/cancellation-charges/"
