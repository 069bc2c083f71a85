"""gpuctl standing: the organization's standing in fair share, and why its work waits where
it does."""

import json

import pytest

pytestmark = pytest.mark.django_db(transaction=True)


def test_standing_says_why_the_work_is_ordered_where_it_is(ok, logged_in):
    shown = ok("standing")
    assert "acme used 0 GPU-hours lately" in shown
    assert "no other organization's waiting work goes before its own" in shown


def test_standing_as_json_is_the_api_object(ok, logged_in):
    body = json.loads(ok("standing", "-o", "json"))
    assert (body["organization"], body["half_life_hours"]) == ("acme", 168.0)
