"""The demo's cluster has a small CPU pool, and the demo's CPU-only notebook runs there."""

import io

import pytest
from django.core.management import call_command

from portal import clock
from scheduling import services
from scheduling.backends import get_backend
from scheduling.models import Placement, Workload
from tenants.models import Project

pytestmark = pytest.mark.django_db


def test_the_demos_cpu_only_notebook_is_admitted_and_runs_on_the_cpu_pool():
    call_command("seed_demo", stdout=io.StringIO())
    backend = get_backend()
    for project in Project.objects.all():  # as the worker does on project creation
        services.project_provision(project_id=project.pk, backend=backend)
    result = services.scheduling_cycle_run()
    for workload_id in result.admitted:
        services.workload_launch(workload_id=workload_id, backend=backend)
    clock.advance(seconds=10)
    services.workloads_sync(backend=backend)
    workload = Workload.objects.get(name="data-prep")
    pools = set(
        Placement.objects.filter(workload=workload).values_list("node__pool__name", flat=True)
    )
    assert (workload.state, pools) == (Workload.State.RUNNING, {"cpu"})
