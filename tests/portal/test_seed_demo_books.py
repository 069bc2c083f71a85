"""The demo's books: its pools have cost models and a recorded availability, so that the
operators' Books page tells a story: H100s sold and idle, an outage, a cost and a margin."""

import io
from datetime import timedelta

import pytest
from django.core.management import call_command

from billing import selectors
from billing.models import CostModel
from portal import clock
from scheduling.models import NodeAvailability

pytestmark = pytest.mark.django_db


@pytest.fixture
def h100_books():
    call_command("seed_demo", stdout=io.StringIO())
    now = clock.now()
    [books] = [
        pool
        for pool in selectors.books(starts_at=now - timedelta(days=7), ends_at=now, watts={})
        if pool.pool.name == "dgx-h100"
    ]
    return books


def test_the_demo_seeds_a_cost_model_per_gpu_pool(h100_books):
    assert CostModel.objects.values("pool").distinct().count() == 3


def test_the_demos_h100s_were_sold_idle_and_down_for_an_afternoon(h100_books):
    hours = h100_books.hours
    assert (hours["used_billed"] > 0, hours["unallocated_idle"] > 0) == (True, True)
    assert hours["unavailable"] == 5 * 8
    assert h100_books.cost > 0


def test_seeding_the_demo_again_keeps_its_books(h100_books):
    spans = NodeAvailability.objects.count()
    call_command("seed_demo", stdout=io.StringIO())
    assert (NodeAvailability.objects.count(), CostModel.objects.count()) == (spans, 3)
