"""A tenant reads its standing in fair share on its quotas page, on a phone."""

import io

import pytest

from .browser import ARTIFACTS, signed_in

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_tenant_reads_why_its_work_queues_where_it_does_on_a_phone(page):
    from django.core.management import call_command

    from portal.management.commands.seed_demo import DEMO_PASSWORD
    from scheduling import services

    call_command("seed_demo", stdout=io.StringIO())
    services.scheduling_cycle_run()
    page.set_viewport_size({"width": 390, "height": 844})
    signed_in(page, "alice@acme.example", DEMO_PASSWORD)
    page.goto("/orgs/acme/quotas/#fair-share")
    sentence = page.inner_text("#fair-share p")
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    page.locator("#fair-share").screenshot(path=str(ARTIFACTS / "phone_fair_share.png"))
    assert (sentence.startswith("acme used"), "x its share" in sentence) == (True, True)
    assert overflow <= 0
