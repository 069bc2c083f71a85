"""The workload page's log pane in headless Chromium: it shows the lines, follows new ones as
the simulated time moves, and fits a phone."""

from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def test_the_log_pane_follows_a_running_workload_on_a_phone(mia, acme, ai_dev, sign_in):
    from django.conf import settings

    from portal import clock
    from scheduling import services
    from scheduling.backends import simulated_backend
    from scheduling.models import GpuClass, QuotaGrant
    from tenants.permissions import Caller

    backend = simulated_backend(description_path=Path(settings.PORTAL_SIMULATED_CLUSTER))
    services.cluster_description_apply(path=Path(settings.PORTAL_SIMULATED_CLUSTER))
    services.inventory_sync(backend=backend)
    services.project_provision(project_id=ai_dev.pk, backend=backend)
    QuotaGrant.objects.create(
        organization=acme, gpu_class=GpuClass.objects.get(name="L4"), guarantee=4, limit=4
    )
    services.workload_submit(
        caller=Caller(user=mia),
        project=ai_dev,
        request=services.WorkloadRequest(
            name="logged",
            kind="training",
            tier="training",
            image="pytorch:latest",
            gpu_classes=("L4",),
            gpus=1,
            env={"SIMULATED_RUNTIME_SECONDS": "600"},
        ),
    )
    for admitted in services.scheduling_cycle_run().admitted:
        services.workload_launch(workload_id=admitted, backend=backend)
    clock.advance(seconds=25)  # its container started 20 s ago: two lines and two steps
    page = sign_in("mia@acme.example")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/orgs/acme/projects/ai-dev/workloads/logged/")
    lines = page.locator("#workload-logs .log-line")
    lines.nth(3).wait_for()
    assert "NCCL initialised" in lines.first.inner_text()
    clock.advance(seconds=20)
    lines.nth(5).wait_for(timeout=20_000)  # the pane asked again (every 3 s) without a reload
    assert " step " in lines.nth(5).inner_text()
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
