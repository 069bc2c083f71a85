from datetime import UTC, datetime, timedelta

import pytest

from portal.templatetags.console import duration, start_range


@pytest.mark.parametrize(
    ("span", "said"),
    [
        (timedelta(seconds=45), "45 s"),
        (timedelta(minutes=12, seconds=59), "12 min"),
        (timedelta(hours=3, minutes=5), "3 h 05 min"),
        (timedelta(days=2, hours=4, minutes=30), "2 d 4 h"),
        (timedelta(seconds=-5), "0 s"),
    ],
)
def test_a_duration_reads_in_its_largest_units(span, said):
    assert duration(span) == said


def test_no_duration_reads_as_nothing():
    assert duration(None) == ""


THU_10 = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("low", "high", "said"),
    [
        (
            THU_10 - timedelta(minutes=50),
            THU_10 + timedelta(hours=3, minutes=40),
            "likely Thu 10:00 (between 09:10 and 13:40)",
        ),
        (THU_10 - timedelta(hours=11), THU_10, "likely Thu 10:00 (between Wed 23:00 and 10:00)"),
        (THU_10, THU_10, "likely Thu 10:00"),
        (THU_10 - timedelta(hours=1), None, "likely Thu 10:00 (not before 09:00)"),
    ],
)
def test_an_estimated_start_reads_as_its_most_likely_time_and_interval(low, high, said):
    assert start_range(THU_10, low, high) == said
