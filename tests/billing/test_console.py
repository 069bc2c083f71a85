"""Billing's console pages: the catalog, orders (with their totals and cancellation charges
for those who see money), the operators' approvals and metering pages, invoices and credit."""

from decimal import Decimal

import pytest
from django.urls import reverse

from billing import services
from billing.models import Order
from scheduling.models import Reservation
from tenants.models import Organization

from .conftest import (
    at,
    cancelled,
    draft,
    granted,
    hold,
    order,
    ran,
    reservation,
    suspend,
    tomorrow,
)

pytestmark = pytest.mark.django_db


def test_the_catalog_page_lists_the_items_with_their_prices(offer, alice, client):
    offer(name="H100 on demand", price="2.9000")
    client.force_login(alice)
    page = client.get("/orgs/acme/catalog/").content.decode()
    assert "2.9000 EUR / GPU-hour" in page


def test_an_owner_orders_from_the_console(reserved, alice, client):
    client.force_login(alice)
    start = tomorrow().strftime("%Y-%m-%dT%H:%M")
    response = client.post(
        "/orgs/acme/orders/",
        {"item": "h100-reserved", "quantity": 8, "starts_at": start, "hours": 4, "project": ""},
    )
    assert (response.status_code, Order.objects.get().total) == (302, Decimal("78.88"))


def test_a_viewer_sees_the_orders_without_their_totals_and_cannot_order(
    reserved, alice, acme, vic, client
):
    order(alice, acme)
    client.force_login(vic)
    page = client.get("/orgs/acme/orders/").content.decode()
    assert ("h100-reserved" in page, "78.88" in page, "<h2>Order</h2>" in page) == (
        True,
        False,
        False,
    )


def test_the_console_does_not_offer_on_demand_items_to_order(on_demand, reserved, alice, client):
    client.force_login(alice)
    page = client.get("/orgs/acme/orders/").content.decode()
    assert ('value="h100-reserved"' in page, 'value="h100-on-demand"' in page) == (True, False)


def test_the_console_refuses_an_order_starting_at_the_end_of_time_on_the_form(
    reserved, alice, client
):
    client.force_login(alice)
    response = client.post(
        "/orgs/acme/orders/",
        {"item": "h100-reserved", "quantity": 8, "starts_at": "9999-12-31T23:00", "hours": 4},
    )
    assert (response.status_code, "5 years" in response.content.decode()) == (200, True)


def test_the_approvals_page_lists_what_waits_in_every_organization(
    reserved, alice, acme, operator, client
):
    order(alice, acme)
    hold(alice, acme, 4)
    client.force_login(operator)
    page = client.get("/staff/approvals/").content.decode()
    assert "Waiting for an operator (2)" in page


def test_the_approvals_page_is_for_operators_only(reserved, alice, client):
    client.force_login(alice)
    assert client.get("/staff/approvals/").status_code == 403


def test_an_operator_rejects_from_the_approvals_page_with_a_reason(
    reserved, alice, acme, operator, client
):
    made = order(alice, acme)
    client.force_login(operator)
    client.post(f"/staff/approvals/order/{made.pk}/reject/", {"reason": "Budget freeze."})
    made.refresh_from_db()
    assert (made.state, made.decision_reason) == (Order.State.REJECTED, "Budget freeze.")


def test_an_operator_approves_a_reservation_from_the_approvals_page(
    reserved, alice, acme, operator, client
):
    [held] = hold(alice, acme, 4)
    client.force_login(operator)
    client.post(f"/staff/approvals/reservation/{held.pk}/approve/")
    held.refresh_from_db()
    assert held.state == Reservation.State.APPROVED


def test_a_tenant_cannot_decide_through_the_approvals_page(reserved, alice, acme, client):
    made = order(alice, acme)
    client.force_login(alice)
    response = client.post(f"/staff/approvals/order/{made.pk}/approve/")
    made.refresh_from_db()
    assert (response.status_code, made.state) == (403, Order.State.SUBMITTED)


def test_the_orders_page_lists_the_charges(reserved, alice, acme, client):
    held = cancelled(alice, reservation(alice, acme, starts_in=10))
    services.cancellation_charge_record(reservation_id=str(held.pk))
    client.force_login(alice)
    page = client.get(reverse("billing:orders", args=["acme"])).content.decode()
    assert ("Cancellation charges" in page, "39.44" in page) == (True, True)


@pytest.mark.parametrize(("caller", "money"), [("owner", True), ("member", False)])
def test_the_orders_page_shows_totals_and_charges_only_to_those_who_see_money(
    reserved, acme, alice, actors, client, caller, money
):
    order(alice, acme)
    held = cancelled(alice, reservation(alice, acme, starts_in=10))
    services.cancellation_charge_record(reservation_id=str(held.pk))
    client.force_login(actors[caller])
    page = client.get(reverse("billing:orders", args=["acme"])).content.decode()
    assert ("78.88" in page, "Cancellation charges" in page) == (money, money)


def test_a_suspended_organizations_invoices_page_answers(invoice, acme, alice, operator, client):
    suspend(acme, operator)
    client.force_login(alice)
    response = client.get(reverse("billing:invoices", args=["acme"]))
    acme.refresh_from_db()
    assert (response.status_code, acme.status) == (200, Organization.Status.SUSPENDED)


def test_the_console_shows_the_credit_left(used_this_month, acme, operator, alice, client):
    granted(acme, operator, "12.50")
    client.force_login(alice)
    page = client.get("/orgs/acme/invoices/").content.decode()
    assert "Credit left: <strong>12.50" in page


def test_the_console_lists_the_invoices_with_their_downloads(two_line_invoice, alice, client):
    client.force_login(alice)
    page = client.get(reverse("billing:invoices", args=["acme"])).content.decode()
    download = reverse("billing:invoice-download", args=["acme", two_line_invoice.pk, "pdf"])
    assert ("69.60" in page, download in page) == (True, True)


def test_a_member_gets_no_invoices_page(two_line_invoice, mia, client):
    client.force_login(mia)
    assert client.get(reverse("billing:invoices", args=["acme"])).status_code == 403


def test_the_console_lists_a_drafts_lines_and_its_update_time(half_cents, acme, alice, client):
    invoice = draft(acme)
    client.force_login(alice)
    page = client.get(reverse("billing:invoices", args=["acme"])).content.decode()
    shown = [line.description in page for line in invoice.lines.all()]
    assert (shown, "updated <time datetime=" in page) == ([True, True], True)


def test_the_operators_page_shows_the_last_difference(on_demand, vision, operator, client):
    ran(vision, start=1, end=2)
    services.usage_reconcile(starts_at=at(0), ends_at=at(24), now=at(12))
    client.force_login(operator)
    page = client.get(reverse("billing:metering")).content.decode()
    assert ("1 difference" in page, "28800.000000" in page) == (True, True)


def test_a_tenant_gets_no_metering_page(alice, client):
    client.force_login(alice)
    assert client.get(reverse("billing:metering")).status_code == 403


def test_the_console_shows_a_lost_work_credit_on_the_invoice(lost_work_invoice, alice, client):
    client.force_login(alice)
    page = client.get(reverse("billing:invoices", args=["acme"])).content.decode()
    assert ("vision/llama-ft evicted" in page, "-34.80" in page) == (True, True)
