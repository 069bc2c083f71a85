"""/metrics gives the month so far of the operator's books per pool: hours by category, cost,
revenue, margin and utilisation, as the books page counts them."""

from decimal import Decimal

import pytest
from prometheus_client.parser import text_string_to_metric_families

from billing import services
from billing.allocation import CATEGORIES
from portal import clock
from scheduling.models import NodePool
from tenants.permissions import Caller

pytestmark = pytest.mark.django_db

TOKEN = "books-metrics-token"


@pytest.fixture
def scraped(cluster, operator, client, settings):
    settings.PORTAL_METRICS_TOKEN = TOKEN
    services.cost_model_add(
        caller=Caller(user=operator),
        pool=NodePool.objects.get(name="dgx-h100"),
        purchase_price_per_gpu=Decimal("36000.00"),
        lifetime_months=50,
        nameplate_watts=700,
        price_per_kwh=Decimal("0.2000"),
    )
    clock.advance(seconds=3600)
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    return {f.name: f for f in text_string_to_metric_families(response.content.decode())}


def _of_pool(family, pool="dgx-h100") -> dict:
    return {
        sample.labels.get("category", sample.name): sample.value
        for sample in family.samples
        if sample.labels["pool"] == pool
    }


def test_the_books_hours_of_each_pool_are_on_metrics_by_category(scraped):
    hours = _of_pool(scraped["portal_books_gpu_hours"])
    assert set(hours) == set(CATEGORIES)
    assert hours["unallocated_idle"] >= 64  # its 64 GPUs idle for the hour since they synced


def test_the_books_cost_and_margin_of_each_pool_are_on_metrics(scraped):
    cost = _of_pool(scraped["portal_books_cost"])["portal_books_cost"]
    margin = _of_pool(scraped["portal_books_margin"])["portal_books_margin"]
    assert cost > 0
    assert margin == -cost  # nothing sold yet
