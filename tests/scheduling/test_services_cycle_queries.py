"""The cycle reads and writes in a fixed number of statements, however long the queue and
however many workloads it preempts; the number itself is locked (a new statement in the cycle
is a decision, made here)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from scheduling import services
from scheduling.models import Workload

from ..factories import ProjectFactory
from .conftest import h100_guarantee

pytestmark = pytest.mark.django_db


def queries_of_a_cycle() -> int:
    with CaptureQueriesContext(connection) as queries:
        services.scheduling_cycle_run()
    return len(queries)


# The statements of a cycle that admits a gang, and of one over a queue that keeps waiting
# (what beat runs every few seconds), per database: SQLite takes the cycle's lock in writes.
ADMITTING = {"postgresql": 42, "sqlite": 45}
WAITING = {"postgresql": 36, "sqlite": 38}


def test_a_cycle_that_admits_takes_its_locked_number_of_statements(submit):
    submit(name="fill", gpus=8, replicas=8)
    assert queries_of_a_cycle() == ADMITTING[connection.vendor]


def test_a_cycle_over_a_waiting_queue_takes_its_locked_number_of_statements(submit):
    submit(name="fill", gpus=8, replicas=8)
    services.scheduling_cycle_run()
    for n in range(3):
        submit(name=f"waits-{n}", gpus=8)
    services.scheduling_cycle_run()  # each gets its first reason
    assert queries_of_a_cycle() == WAITING[connection.vendor]


def test_a_longer_queue_costs_the_cycle_no_more_queries(submit):
    submit(name="fill", gpus=8, replicas=8)
    services.scheduling_cycle_run()  # the H100s are full: what comes next waits
    for n in range(3):
        submit(name=f"few-{n}", gpus=8)
    few = queries_of_a_cycle()
    for n in range(30):
        submit(name=f"many-{n}", gpus=8)
    assert queries_of_a_cycle() == few


def test_preempting_more_gangs_costs_the_cycle_no_more_queries(full_h100, globex, bruno, submit):
    h100_guarantee(globex, 32)
    web = ProjectFactory(organization=globex, slug="web")
    service = {"user": bruno, "project": web, "kind": "inference", "tier": "inference-prod"}
    preempted = Workload.objects.filter(preempted_by__isnull=False)
    submit(name="serve-1", gpus=8, replicas=1, **service)
    one_victim = queries_of_a_cycle()
    assert preempted.count() == 1
    submit(name="serve-3", gpus=8, replicas=3, **service)
    three_victims = queries_of_a_cycle()
    assert preempted.count() == 4
    assert one_victim == three_victims
