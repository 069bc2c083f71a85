"""The orders API: owners and admins order, a total answered as a decimal string, bad input
and orders beyond what the portal sells a 400 on the field, another tenant's order a 404."""

import pytest

from billing.models import Order

from ...roles import MANAGING
from ..conftest import order, tomorrow

pytestmark = pytest.mark.django_db

URL = "/api/v1/organizations/acme/orders/"


@pytest.mark.parametrize(("caller", "status"), MANAGING)
def test_owners_and_admins_order_and_the_others_get_what_their_role_allows(
    reserved, actors, api_as, caller, status
):
    body = {
        "item": "h100-reserved",
        "quantity": 8,
        "starts_at": tomorrow().isoformat(),
        "ends_at": tomorrow(4).isoformat(),
    }
    assert api_as(actors.get(caller)).post(URL, body, format="json").status_code == status


def test_another_tenants_order_is_a_404(reserved, alice, acme, bruno, api_as):
    made = order(alice, acme)
    response = api_as(bruno).get(f"/api/v1/organizations/globex/orders/{made.pk}/")
    assert response.status_code == 404


def test_an_api_order_answers_its_total_as_a_decimal_string(reserved, alice, api_as):
    body = {
        "item": "h100-reserved",
        "quantity": 8,
        "starts_at": tomorrow().isoformat(),
        "ends_at": tomorrow(4).isoformat(),
    }
    made = api_as(alice).post(URL, body, format="json").json()
    assert (made["total"], made["currency"], made["state"]) == ("78.88", "EUR", "submitted")


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"quantity": "8"}, "quantity"),
        ({"starts_at": "soon"}, "starts_at"),
        ({"item": "Not A Slug"}, "item"),
        ({"price": "0"}, "price"),
    ],
)
def test_bad_order_input_is_a_400_naming_the_field(reserved, alice, api_as, fields, field):
    body = {
        "item": "h100-reserved",
        "quantity": 8,
        "starts_at": tomorrow().isoformat(),
        "ends_at": tomorrow(4).isoformat(),
        **fields,
    }
    response = api_as(alice).post(URL, body, format="json")
    assert (response.status_code, list(response.json()["error"]["fields"])) == (400, [field])


def test_an_on_demand_item_cannot_be_ordered_and_the_api_says_why(on_demand, alice, api_as):
    body = {
        "item": "h100-on-demand",
        "quantity": 8,
        "starts_at": tomorrow().isoformat(),
        "ends_at": tomorrow(4).isoformat(),
    }
    response = api_as(alice).post(URL, body, format="json")
    fields = response.json()["error"]["fields"]
    assert (response.status_code, list(fields), "billed as it is used" in fields["item"][0]) == (
        400,
        ["item"],
        True,
    )


def api_order(api_as, user, **fields):
    body = {
        "item": "h100-reserved",
        "quantity": 8,
        "starts_at": tomorrow().isoformat(),
        "ends_at": tomorrow(4).isoformat(),
        **fields,
    }
    return api_as(user).post(URL, body, format="json")


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"ends_at": "9999-12-31T23:00:00Z"}, "ends_at"),
        ({"starts_at": "9999-12-31T19:00:00Z", "ends_at": "9999-12-31T23:00:00Z"}, "starts_at"),
        ({"quantity": 100_000, "ends_at": "2099-12-31T00:00:00Z"}, "quantity"),
    ],
)
def test_an_order_beyond_what_the_portal_can_sell_is_a_400_on_its_field(
    reserved, alice, api_as, fields, field
):
    response = api_order(api_as, alice, **fields)
    refused = (response.status_code, field in response.json()["error"]["fields"])
    assert (refused, Order.objects.count()) == ((400, True), 0)
