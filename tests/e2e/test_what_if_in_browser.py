"""The submit form's Check button in headless Chromium, on a desktop and on a phone."""

from pathlib import Path

import pytest

from .browser import ARTIFACTS, l4_inference_form

pytestmark = pytest.mark.e2e


@pytest.fixture
def l4_cluster(acme, ai_dev):
    from django.conf import settings

    from scheduling import services
    from scheduling.backends import simulated_backend
    from scheduling.models import GpuClass, QuotaGrant

    description = Path(settings.PORTAL_SIMULATED_CLUSTER)
    services.cluster_description_apply(path=description)
    services.inventory_sync(backend=simulated_backend(description_path=description))
    QuotaGrant.objects.create(
        organization=acme, gpu_class=GpuClass.objects.get(name="L4"), guarantee=4, limit=4
    )
    services.scheduling_cycle_run()


def check(page, *, gpus: str):
    l4_inference_form(page, name="resnet-eval", gpus=gpus)
    page.click("button:has-text('Check')")
    return page.wait_for_selector("#what-if")


@pytest.mark.parametrize("width", [1280, 390])
def test_a_member_checks_a_workload_before_submitting_it(mia, l4_cluster, sign_in, width):
    from scheduling.models import Workload

    page = sign_in("mia@acme.example")
    page.set_viewport_size({"width": width, "height": 844})
    answer = check(page, gpus="1")
    assert "Would start now on L4" in answer.inner_text()
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"what_if_{width}.png"), full_page=True)
    assert (Workload.objects.exists(), overflow <= 0) == (False, True)


def test_the_checked_workload_is_submitted_as_checked(mia, l4_cluster, sign_in):
    from scheduling.models import Workload

    page = sign_in("mia@acme.example")
    check(page, gpus="1")
    page.click("button:has-text('Submit')")
    page.wait_for_selector("text=Workload resnet-eval submitted")
    assert Workload.objects.get().gpus == 1


def test_a_request_over_the_quota_is_answered_with_its_refusal(mia, l4_cluster, sign_in):
    page = sign_in("mia@acme.example")
    answer = check(page, gpus="8")
    assert "Would be refused" in answer.inner_text()
