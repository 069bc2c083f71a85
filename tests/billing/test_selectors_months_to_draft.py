"""Which months the beat drafts (``selectors.months_to_draft``): every month an organization
may be in, in any time zone, the month before each, and every month with a draft left."""

from datetime import UTC, datetime

import pytest

from billing import selectors, services

pytestmark = pytest.mark.django_db


def test_mid_month_the_month_and_the_one_before_are_drafted():
    now = datetime(2026, 6, 15, 12, tzinfo=UTC)
    assert selectors.months_to_draft(now=now) == [(2026, 5), (2026, 6)]


def test_late_on_a_months_last_day_utc_the_next_month_is_drafted_too():
    now = datetime(2026, 6, 30, 20, tzinfo=UTC)  # already July 1 at UTC+14
    assert selectors.months_to_draft(now=now) == [(2026, 5), (2026, 6), (2026, 7)]


def test_early_on_a_months_first_day_utc_the_month_before_is_still_drafted():
    now = datetime(2027, 1, 1, 4, tzinfo=UTC)  # still December 31 at UTC-12
    assert selectors.months_to_draft(now=now) == [(2026, 11), (2026, 12), (2027, 1)]


def test_a_month_with_a_draft_left_is_drafted_however_long_ago(acme):
    services.invoice_draft(organization=acme, year=2025, month=3)
    now = datetime(2026, 6, 15, 12, tzinfo=UTC)
    assert selectors.months_to_draft(now=now) == [(2025, 3), (2026, 5), (2026, 6)]
