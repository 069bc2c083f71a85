"""The usage API's period: a field error (400) for one that starts after it ends, whether
both days are given or one meets this month's default other end."""

from datetime import timedelta

import pytest

from portal import clock

pytestmark = pytest.mark.django_db

USAGE = "/api/v1/organizations/acme/usage/"


def test_a_period_ending_before_it_starts_is_a_400_naming_the_end(acme, alice, api_as):
    answer = api_as(alice).get(USAGE, {"start": "2026-11-20", "end": "2026-11-10"})
    assert (answer.status_code, list(answer.json()["error"]["fields"])) == (400, ["end"])


def test_a_start_after_this_months_end_is_a_400_naming_the_start(acme, alice, api_as):
    later = (clock.now() + timedelta(days=40)).date()
    answer = api_as(alice).get(USAGE, {"start": later.isoformat()})
    assert (answer.status_code, list(answer.json()["error"]["fields"])) == (400, ["start"])
