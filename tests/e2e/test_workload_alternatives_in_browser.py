"""A pending workload's page on a phone: what would unblock it, and its quota request link
opening the quota form filled in."""

import pytest

from .browser import signed_in

pytestmark = pytest.mark.django_db(transaction=True)


def _too_big_waits() -> None:
    """alice submits five 8-GPU replicas to the demo's acme, 8 H100s over its quota left."""
    from django.contrib.auth import get_user_model

    from scheduling import services
    from tenants.models import Project
    from tenants.permissions import Caller

    services.workload_submit(
        caller=Caller(user=get_user_model().objects.get(email="alice@acme.example")),
        project=Project.objects.get(organization__slug="acme", slug="ai-dev"),
        request=services.WorkloadRequest(
            name="too-big",
            kind="training",
            tier="training",
            image="nvcr.io/nvidia/pytorch:25.01-py3",
            gpu_classes=("H100-80GB",),
            gpus=8,
            replicas=5,
        ),
    )
    services.scheduling_cycle_run()


def test_a_pending_workloads_alternatives_fit_a_phone_and_link_the_quota_form_filled_in(
    page, demo
):
    _too_big_waits()
    page.set_viewport_size({"width": 390, "height": 844})
    signed_in(page, "alice@acme.example", demo)
    page.goto("/orgs/acme/projects/ai-dev/workloads/too-big/")
    page.wait_for_selector("#alternatives >> text=4 GPUs per replica instead of 8")
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    page.click("#alternatives >> text=Ask for 8 more")
    page.wait_for_selector("input[name=amount]")
    assert (overflow <= 0, page.input_value("input[name=amount]")) == (True, "8")
