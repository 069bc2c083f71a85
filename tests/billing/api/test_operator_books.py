"""The operator API's books: cost models added and listed, and a month's books per pool, as
JSON and as CSV and JSON exports for finance."""

import csv
import io
from datetime import timedelta
from decimal import Decimal

import pytest

from billing.models import CostModel
from portal import clock

pytestmark = pytest.mark.django_db

OP = "/api/v1/operator"
TERMS = {
    "pool": "dgx-h100",
    "purchase_price_per_gpu": "36000.00",
    "lifetime_months": 50,
    "nameplate_watts": 700,
    "price_per_kwh": "0.2000",
    "overhead_per_node_hour": "0.8000",
}


def this_month() -> str:
    now = clock.now()
    return f"{now.year}/{now.month}"


@pytest.fixture
def costed(cluster, ops):
    """dgx-h100 has a cost model from now on."""
    _, client = ops
    response = client.post(f"{OP}/cost-models/", TERMS, format="json")
    assert response.status_code == 201
    return response.json()


def test_an_operator_adds_a_cost_model_from_now(costed, ops):
    user, _ = ops
    version = CostModel.objects.get()
    assert (version.pool.name, version.created_by) == ("dgx-h100", user)
    assert costed["price_per_kwh"] == "0.2000"


def test_cost_models_are_listed_by_pool(costed, ops):
    _, client = ops
    [row] = client.get(f"{OP}/cost-models/?pool=dgx-h100").json()["results"]
    assert row["id"] == costed["id"]
    assert client.get(f"{OP}/cost-models/?pool=l4-inference").json()["results"] == []


def test_an_unknown_pool_is_a_field_error(cluster, ops):
    _, client = ops
    response = client.post(f"{OP}/cost-models/", {**TERMS, "pool": "nowhere"}, format="json")
    assert response.status_code == 400
    assert "pool" in response.json()["error"]["fields"]


def test_a_negative_power_price_is_a_field_error(cluster, ops):
    _, client = ops
    response = client.post(f"{OP}/cost-models/", {**TERMS, "price_per_kwh": "-1"}, format="json")
    assert response.status_code == 400
    assert "price_per_kwh" in response.json()["error"]["fields"]


def test_a_cost_model_from_the_past_is_a_field_error(cluster, ops):
    _, client = ops
    past = (clock.now() - timedelta(days=1)).isoformat()
    response = client.post(f"{OP}/cost-models/", {**TERMS, "effective_from": past}, format="json")
    assert response.status_code == 400
    assert "effective_from" in response.json()["error"]["fields"]


def test_a_months_books_add_up_per_pool(costed, ops):
    _, client = ops
    pools = {p["pool"]: p for p in client.get(f"{OP}/books/{this_month()}/").json()}
    h100 = pools["dgx-h100"]
    hours = sum(Decimal(v) for v in h100["hours"].values())
    assert hours == Decimal(h100["total_hours"]) > 0
    assert sum(Decimal(v) for v in h100["costs"].values()) == Decimal(h100["cost"]) > 0
    assert Decimal(h100["margin"]) == Decimal(h100["revenue"]) - Decimal(h100["cost"])


def test_the_books_export_as_csv_a_row_per_pool_and_category(costed, ops):
    _, client = ops
    response = client.get(f"{OP}/books/{this_month()}/csv/")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    h100 = [row for row in rows if row["pool"] == "dgx-h100"]
    assert len(h100) == 7
    assert {row["category"] for row in h100} >= {"reserved_lent", "unallocated_idle"}


def test_the_books_export_as_json(costed, ops):
    _, client = ops
    response = client.get(f"{OP}/books/{this_month()}/json/")
    assert response["Content-Type"] == "application/json"
    assert "dgx-h100" in {p["pool"] for p in response.json()["pools"]}


def test_a_month_that_does_not_exist_is_a_404(ops):
    _, client = ops
    assert client.get(f"{OP}/books/2026/13/").status_code == 404


def test_an_export_format_that_does_not_exist_is_a_404(ops):
    _, client = ops
    assert client.get(f"{OP}/books/2026/11/xlsx/").status_code == 404
