"""The workload page's log pane in headless Chromium: it shows the lines, follows new ones as
the simulated time moves, and fits a phone."""

import pytest

from .browser import l4_training_submitted

pytestmark = pytest.mark.e2e


def test_the_log_pane_follows_a_running_workload_on_a_phone(mia, acme, ai_dev, sign_in):
    from portal import clock
    from scheduling import services

    backend = l4_training_submitted(
        user=mia, organization=acme, project=ai_dev, name="logged", runtime_seconds=600
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
