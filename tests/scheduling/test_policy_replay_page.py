"""Operators' policy replay page: the change in a form, both scenarios side by side with a
chart; tenants get a 403, as on every staff page."""

import pytest

pytestmark = pytest.mark.django_db

URL = "/staff/replay/"


def test_a_tenant_may_not_open_the_replay(client, alice, cluster):
    client.force_login(alice)
    assert client.get(URL).status_code == 403


def test_a_tenant_may_not_run_a_replay(client, alice, cluster):
    client.force_login(alice)
    assert client.get(URL, {"since": "1d", "weight": "acme=2"}).status_code == 403


def test_the_page_shows_the_form_before_any_replay(operator_client, cluster):
    page = operator_client.get(URL).content.decode()
    assert "Fair-share weights" in page and "Current" not in page


def test_a_replay_shows_both_scenarios_and_a_chart_per_class(operator_client, recorded_history):
    page = operator_client.get(URL, {"since": "1d", "weight": "acme=2"}).content.decode()
    assert "weight acme: 2" in page
    assert "<th>Current</th><th>Proposed</th>" in page
    assert 'aria-label="H100-80GB: GPUs allocated, current and proposed"' in page


def test_a_bad_change_is_told_on_its_field(operator_client, cluster):
    page = operator_client.get(URL, {"since": "1d", "weight": "acme=zero"}).content.decode()
    assert "acme: &#x27;zero&#x27; is not a number." in page


def test_a_name_that_does_not_exist_is_told_on_its_field(operator_client, cluster):
    page = operator_client.get(URL, {"since": "1d", "tier": "gold=5"}).content.decode()
    assert "no tier &#x27;gold&#x27;" in page


def test_a_half_life_on_the_page_is_replayed(operator_client, recorded_history):
    page = operator_client.get(URL, {"since": "1d", "half_life": "24"}).content.decode()
    assert "fair-share half-life: 24 h" in page


def test_a_negative_half_life_is_told_on_its_field(operator_client, cluster):
    page = operator_client.get(URL, {"since": "1d", "half_life": "-5"}).content.decode()
    assert "a half-life is 0 (off) to 8760 hours, not -5." in page
