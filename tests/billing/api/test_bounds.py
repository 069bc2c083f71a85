"""Dates, numbers and ids out of bounds in billing's API: a 400 on the field or a 404, never a
500 (years past 9999 once a day is added, ids that are not numbers) and never accepted as
something the schema does not say (money as a JSON number or with an exponent, sign or
space)."""

import pytest

pytestmark = pytest.mark.django_db

ACME = "/api/v1/organizations/acme"


@pytest.mark.parametrize(
    "query", ["end=9999-12-31", "start=9999-12-31", "start=0001-01-01", "end=1999-12-31"]
)
def test_a_usage_period_outside_the_years_2000_to_2100_is_a_400_on_its_field(alice, api_as, query):
    response = api_as(alice).get(f"{ACME}/usage/?{query}")
    field = query.split("=")[0]
    assert (response.status_code, list(response.json()["error"]["fields"])) == (400, [field])


def test_a_usage_period_within_the_bounds_is_answered(alice, api_as):
    response = api_as(alice).get(f"{ACME}/usage/?start=2000-01-01&end=2100-12-31")
    assert (response.status_code, response.json()["rows"]) == (200, [])


@pytest.mark.parametrize("month", ["0/1", "9999/12", "10000/1", "2026/13", "1999/12"])
def test_a_month_export_outside_the_years_2000_to_2100_is_a_404(operator, api_as, month):
    response = api_as(operator).get(f"/api/v1/invoices/{month}/export/csv/")
    assert (response.status_code, response.json()["error"]["code"]) == (404, "not_found")


@pytest.mark.parametrize("path", ["/api/v1/invoices/0/1/", "/api/v1/invoices/9999/12/"])
def test_a_month_without_an_export_is_a_404(operator, api_as, path):
    assert api_as(operator).get(path).status_code == 404


@pytest.mark.parametrize("line_id", ["abc", "1.5", "-1", "99999999999999999999999"])
def test_a_line_id_that_is_not_one_is_a_404(invoice, alice, api_as, line_id):
    url = f"{ACME}/invoices/{invoice.pk}/lines/{line_id}/usage/"
    assert api_as(alice).get(url).status_code == 404


@pytest.mark.parametrize("amount", [100, 100.5, "1e5", " 5", "5 ", "+5", "5.", ".5", "5.001"])
def test_a_budget_amount_not_spelt_as_the_schema_says_is_a_400_on_the_field(alice, api_as, amount):
    response = api_as(alice).put(f"{ACME}/budgets/", {"monthly_amount": amount}, format="json")
    assert (response.status_code, list(response.json()["error"]["fields"])) == (
        400,
        ["monthly_amount"],
    )


@pytest.mark.parametrize("amount", ["5", "0.01", "1500.00", "999999999999.99"])
def test_a_budget_amount_spelt_as_the_schema_says_is_taken(alice, api_as, amount):
    response = api_as(alice).put(f"{ACME}/budgets/", {"monthly_amount": amount}, format="json")
    assert response.status_code == 200


def test_orders_filtered_by_a_state_that_is_not_one_is_a_400_naming_the_parameter(alice, api_as):
    response = api_as(alice).get(f"{ACME}/orders/?state=bogus")
    assert (response.status_code, list(response.json()["error"]["fields"])) == (400, ["state"])


def test_orders_filter_by_state(alice, api_as):
    response = api_as(alice).get(f"{ACME}/orders/?state=Submitted")
    assert (response.status_code, response.json()["results"]) == (200, [])


@pytest.mark.parametrize("starts_at", ["2027-06-01T09:00:00", "2027-06-01"])
def test_an_order_window_without_its_utc_offset_is_a_400_on_the_field(alice, api_as, starts_at):
    body = {
        "item": "h100-reserved",
        "quantity": 1,
        "starts_at": starts_at,
        "ends_at": "2027-06-02T09:00:00Z",
    }
    response = api_as(alice).post(f"{ACME}/orders/", body, format="json")
    assert (response.status_code, list(response.json()["error"]["fields"])) == (400, ["starts_at"])
