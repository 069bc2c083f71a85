"""gpuctl's reading of an estimated start: the most likely moment and the 80% interval."""

import pytest
from gpuctl.workloads import start_range


@pytest.mark.parametrize(
    ("pending", "said"),
    [
        (
            {
                "estimated_start": "2026-12-03T10:00:00Z",
                "estimated_start_low": "2026-12-03T09:10:00Z",
                "estimated_start_high": "2026-12-04T01:40:00Z",
            },
            "likely 2026-12-03 10:00 UTC (between 09:10 and 2026-12-04 01:40)",
        ),
        (
            {
                "estimated_start": "2026-12-03T10:00:00Z",
                "estimated_start_low": "2026-12-03T10:00:00Z",
                "estimated_start_high": "2026-12-03T10:00:00Z",
            },
            "likely 2026-12-03 10:00 UTC",
        ),
        ({"estimated_start": None}, "-"),
    ],
)
def test_an_estimated_start_reads_as_its_most_likely_time_and_interval(pending, said):
    assert start_range(pending) == said
