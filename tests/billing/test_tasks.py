"""Each billing task loads ids and calls the service of its name; it answers what the service
did. (A reservation's cancellation charge and an order's fulfilment also run through a real
worker in tests/worker.)"""

from datetime import UTC
from decimal import Decimal

import pytest
from django.core import mail
from django.db import connection
from django.db.models import Sum

from billing import tasks
from billing.models import BillingRecord, BudgetAlert, Invoice, Order
from billing.pricing import month_of
from portal import clock
from scheduling.models import Placement

from .conftest import approved, budget, cancelled, metered, order, ran, reservation, spent_today

pytestmark = pytest.mark.django_db

NO_SUCH_ORDER = "00000000-0000-0000-0000-000000000000"


def test_the_fulfilment_task_fulfils_an_approved_order(reserved, alice, acme, operator):
    made = approved(alice, acme, operator)
    assert tasks.order_fulfil(str(made.pk)) == Order.State.FULFILLED


def test_the_fulfilment_task_of_an_order_that_is_gone_does_nothing(db):
    assert tasks.order_fulfil(NO_SUCH_ORDER) is None


def test_the_order_mail_task_mails_a_submitted_order_to_its_creator_and_the_operators(
    reserved, alice, acme, operator
):
    made = order(alice, acme)
    sent = tasks.order_email_send(str(made.pk), change="submitted")
    assert (sent, sorted(m.to[0] for m in mail.outbox)) == (
        2,
        sorted([alice.email, operator.email]),
    )


def test_the_order_mail_task_of_an_order_that_is_gone_sends_nothing(db):
    assert (tasks.order_email_send(NO_SUCH_ORDER), mail.outbox) == (0, [])


def test_the_charge_task_records_the_charge_of_a_cancelled_reservation_from_its_event(
    reserved, alice, acme
):
    held = cancelled(alice, reservation(alice, acme, starts_in=10))
    # Subscribed to the reservation's events: the event's other fields are passed along.
    assert tasks.cancellation_charge_record(str(held.pk), change="cancelled") == "39.44"


def test_the_charge_task_of_a_reservation_still_holding_records_nothing(reserved, alice, acme):
    held = reservation(alice, acme, starts_in=10)
    assert tasks.cancellation_charge_record(str(held.pk), change="approved") is None


def test_the_reconcile_task_reports_what_it_caught_up_with(reserved, alice, acme):
    cancelled(alice, reservation(alice, acme, starts_in=10))
    assert tasks.billing_reconcile() == {"orders_fulfilled": 0, "charges_recorded": 1}


def test_the_metering_task_opens_and_rates_the_intervals_of_what_ran(on_demand, vision):
    ran(vision, start=-47, end=-46)  # 8 GPUs for an hour, yesterday
    counts = tasks.usage_meter()
    billed = BillingRecord.objects.aggregate(seconds=Sum("quantity_seconds"))["seconds"]
    assert (counts["opened"], billed) == (1, Decimal(8 * 3600))


def test_the_reconciliation_task_meters_yesterday_first_and_finds_it_balanced(on_demand, vision):
    ran(vision, start=-47, end=-46)
    assert tasks.usage_reconcile_yesterday() is True


def test_the_reconciliation_task_says_when_yesterday_does_not_balance(on_demand, vision):
    ran(vision, start=-47, end=-46)
    tasks.usage_meter()
    Placement.objects.update(running_at=None)  # the rows no longer say it ran
    assert tasks.usage_reconcile_yesterday() is False


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="the metering tables are partitioned on PostgreSQL only; set DATABASE_URL",
)
def test_the_partitions_task_makes_the_partitions_of_the_months_to_come(db):
    clock.advance(seconds=200 * 24 * 3600)  # past the months the migration made
    this_month = month_of(clock.now())[0]
    assert f"billing_usageinterval_{this_month:%Y_%m}" in tasks.metering_partitions_ensure()


def test_the_beat_task_drafts_this_month(on_demand, acme, vision):
    now = clock.now().astimezone(UTC)
    metered((vision, {"start": -20, "end": -19}))  # today, before now
    tasks.invoices_draft()
    assert Invoice.objects.filter(period_start__month=now.month).count() == 1


@pytest.mark.usefixtures("mid_month")
def test_the_budget_task_records_each_threshold_crossed(alice, acme, vision):
    budget(alice, acme, "50")
    spent_today(vision, 2)  # 46.40 of 50: past 50% and 80%
    assert tasks.budgets_check() == 2


@pytest.mark.usefixtures("mid_month")
def test_the_budget_alert_task_mails_the_owners_and_admins(alice, adam, acme, vision):
    budget(alice, acme, "50", thresholds=[80])
    spent_today(vision, 2)
    tasks.budgets_check()
    sent = tasks.budget_alert_email_send(BudgetAlert.objects.get().pk)
    assert (sent, sorted(m.to[0] for m in mail.outbox)) == (2, sorted([alice.email, adam.email]))
