"""The operator API's queue across tenants, each waiting workload with why it waits, and the
insights page's findings."""

import pytest

from ..test_insights import h100_filled, queue

pytestmark = pytest.mark.django_db

OP = "/api/v1/operator"


def test_the_queue_lists_every_waiting_workload_with_why_it_waits(full_h100, submit, cycle, ops):
    _, client = ops
    submit(name="waits", gpus=8)
    cycle()
    [row] = client.get(f"{OP}/queue/").json()["results"]
    assert (row["organization"], row["project"], row["name"]) == ("acme", "ai-dev", "waits")
    assert row["pending_code"] and row["pending_message"]
    assert row["queue_position"] == 1


def test_the_queue_is_narrowed_to_one_organization(full_h100, submit, cycle, ops):
    _, client = ops
    submit(name="waits", gpus=8)
    cycle()
    assert client.get(f"{OP}/queue/?organization=globex").json()["results"] == []


def test_the_insights_are_those_of_the_operators_page(submit, cycle, advance, ops):
    _, client = ops
    h100_filled(submit, cycle, advance, utilization="0.1")
    queue(submit, 5)
    rules = [insight["rule"] for insight in client.get(f"{OP}/insights/").json()]
    assert "low_utilization_long_queue" in rules
