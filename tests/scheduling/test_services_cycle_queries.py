"""The cycle reads and writes in a fixed number of statements, however long the queue."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from scheduling import services

pytestmark = pytest.mark.django_db


def queries_of_a_cycle() -> int:
    with CaptureQueriesContext(connection) as queries:
        services.scheduling_cycle_run()
    return len(queries)


def test_a_longer_queue_costs_the_cycle_no_more_queries(submit):
    submit(name="fill", gpus=8, replicas=8)
    services.scheduling_cycle_run()  # the H100s are full: what comes next waits
    for n in range(3):
        submit(name=f"few-{n}", gpus=8)
    few = queries_of_a_cycle()
    for n in range(30):
        submit(name=f"many-{n}", gpus=8)
    assert queries_of_a_cycle() == few
