"""An evicted workload's page in headless Chromium on a phone: the eviction with the notice its
tier gave and the work it lost, and when it is back in the queue."""

from datetime import timedelta

import pytest

from .browser import l4_training_submitted

pytestmark = pytest.mark.e2e


def test_a_member_reads_an_evictions_notice_and_work_lost_on_a_phone(mia, acme, ai_dev, sign_in):
    from portal import clock
    from scheduling import services
    from scheduling.models import PriorityTier, Workload
    from scheduling.services.lifecycle import workloads_evict

    backend = l4_training_submitted(
        user=mia, organization=acme, project=ai_dev, name="evicted", runtime_seconds=3600
    )
    PriorityTier.objects.filter(name="training").update(
        min_run_time=timedelta(minutes=30), notice_seconds=300
    )
    for admitted in services.scheduling_cycle_run().admitted:
        services.workload_launch(workload_id=admitted, backend=backend)
    clock.advance(seconds=5)
    services.workloads_sync(backend=backend)  # running from here
    clock.advance(seconds=60)
    victim = str(Workload.objects.get(name="evicted").pk)
    workloads_evict(
        reasons={victim: "Evicted for a production service (tier 1000 over tier 500) on L4."},
        preempted_by={victim: None},
        event_data={victim: {"reason": "priority"}},
    )
    page = sign_in("mia@acme.example")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/orgs/acme/projects/ai-dev/workloads/evicted/")
    text = page.inner_text("main")
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert "Notice: 300 s; work lost: 60 GPU-seconds since its start" in text
    assert "runs at least 30 min before it may be preempted; 300 s notice" in text
    assert overflow <= 0
