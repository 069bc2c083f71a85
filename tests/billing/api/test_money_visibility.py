"""One rule for money (`sees_money` in tenants/permissions.py): owners and admins see what the
organization pays (invoices and their exports, usage and its cost, credits, budgets, order
prices and totals, cancellation charges), also through a read-only token and while the
organization is suspended; members and viewers see none of it; another tenant gets a 404."""

import pytest

from ...roles import MANAGERS_READ
from ..conftest import cancelled, order, reservation, suspend

pytestmark = pytest.mark.django_db

ACME = "/api/v1/organizations/acme/"
READS = ["invoices/", "credits/", "budgets/", "usage/", "cancellation-charges/"]


@pytest.mark.parametrize("path", [*READS, "invoices/{invoice}/", "invoices/{invoice}/export/csv/"])
@pytest.mark.parametrize("role", ["owner", "admin"])
def test_a_read_only_token_of_an_owner_or_admin_reads_the_money(
    invoice, acme, actors, token_for, role, path
):
    _, client = token_for(actors[role], acme, scope="read")
    assert client.get(ACME + path.format(invoice=invoice.pk)).status_code == 200


@pytest.mark.parametrize("path", [*READS, "invoices/{invoice}/", "invoices/{invoice}/export/pdf/"])
def test_a_suspended_organization_reads_its_money(invoice, acme, alice, operator, api_as, path):
    suspend(acme, operator)
    assert api_as(alice).get(ACME + path.format(invoice=invoice.pk)).status_code == 200


def test_a_suspended_organization_still_changes_no_budget(acme, alice, operator, api_as):
    suspend(acme, operator)
    response = api_as(alice).put(ACME + "budgets/", {"monthly_amount": "100"}, format="json")
    assert response.status_code == 409


@pytest.mark.parametrize(("caller", "status"), MANAGERS_READ)
def test_only_owners_and_admins_read_the_cancellation_charges(
    reserved, acme, alice, actors, api_as, caller, status
):
    cancelled(alice, reservation(alice, acme, starts_in=10))
    assert api_as(actors.get(caller)).get(ACME + "cancellation-charges/").status_code == status


@pytest.mark.parametrize(("caller", "status"), MANAGERS_READ)
def test_only_owners_and_admins_read_what_cancelling_would_cost(
    reserved, acme, alice, actors, api_as, caller, status
):
    held = reservation(alice, acme, starts_in=10)
    url = f"{ACME}reservations/{held.pk}/cancellation-charge/"
    assert api_as(actors.get(caller)).get(url).status_code == status


@pytest.mark.parametrize(
    ("caller", "money"), [("owner", True), ("admin", True), ("member", False), ("viewer", False)]
)
def test_an_orders_price_and_total_are_shown_only_to_those_who_see_money(
    reserved, acme, alice, actors, api_as, caller, money
):
    made = order(alice, acme)
    client = api_as(actors[caller])
    listed = client.get(ACME + "orders/").json()["results"][0]
    one = client.get(f"{ACME}orders/{made.pk}/").json()
    shown = [(o["total"], o["unit_price"]) for o in (listed, one)]
    expected = ("78.88", "2.4650") if money else (None, None)
    assert shown == [expected, expected]
