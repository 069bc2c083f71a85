from datetime import timedelta

import pytest

from portal.templatetags.console import duration


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
