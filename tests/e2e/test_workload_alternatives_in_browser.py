"""A pending workload's page on a phone: what would unblock it, and its quota request link
opening the quota form filled in."""

import pytest

from .browser import signed_in, too_big_waits

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_pending_workloads_alternatives_fit_a_phone_and_link_the_quota_form_filled_in(page, demo):
    too_big_waits()
    page.set_viewport_size({"width": 390, "height": 844})
    signed_in(page, "alice@acme.example", demo)
    page.goto("/orgs/acme/projects/ai-dev/workloads/too-big/")
    page.wait_for_selector("#alternatives >> text=4 GPUs per replica instead of 8")
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    page.click("#alternatives >> text=Ask for 8 more")
    page.wait_for_selector("input[name=amount]")
    assert (overflow <= 0, page.input_value("input[name=amount]")) == (True, "8")
