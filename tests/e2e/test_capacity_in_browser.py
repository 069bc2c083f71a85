"""Capacity ahead in headless Chromium: the reservation form proposes windows where the block
fits, a click fills the start, and the page with its hourly strips fits a phone."""

from datetime import timedelta
from pathlib import Path

import pytest

from .browser import ARTIFACTS

pytestmark = pytest.mark.e2e


@pytest.fixture
def crowded(alice, acme, bruno, globex):
    """The demo cluster, with globex holding 60 of the 64 H100 for the next five hours: the
    first whole node of H100 is free when that ends."""
    from django.conf import settings

    from scheduling import services
    from scheduling.backends import simulated_backend

    from ..scheduling.capacity import next_hour, reserve_hours

    description = Path(settings.PORTAL_SIMULATED_CLUSTER)
    services.cluster_description_apply(path=description)
    services.inventory_sync(backend=simulated_backend(description_path=description))
    reserve_hours(bruno, globex, from_hours=0, hours=5, gpus=60)
    return next_hour() + timedelta(hours=5)


def test_a_proposed_window_fills_the_form_and_is_reserved_on_a_phone(crowded, acme, sign_in):
    from scheduling.models import Reservation

    page = sign_in("alice@acme.example")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/orgs/acme/reservations/")
    page.select_option("select[name=gpu_class]", "H100-80GB")
    page.fill("input[name=gpus]", "8")
    page.fill("input[name=hours]", "4")
    page.dispatch_event("input[name=hours]", "change")
    # The page opened with proposals for its first class: wait for those of the H100.
    first = page.locator("button.proposal", has_text="H100-80GB").first
    first.wait_for()
    page.wait_for_load_state("networkidle")
    assert first.inner_text().startswith("8 H100-80GB on one node in dgx-h100: from")
    first.click()
    assert page.input_value("input[name=starts_at]") == f"{crowded:%Y-%m-%dT%H:%M}"
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    page.screenshot(path=str(ARTIFACTS / "phone_reservation_proposals.png"), full_page=True)
    page.click("button:has-text('Reserve')")
    page.wait_for_selector("text=Reserved in dgx-h100")
    held = Reservation.objects.get(organization=acme)
    assert (held.starts_at, held.gpus, overflow <= 0) == (crowded, 8, True)


def test_the_hourly_strip_shows_the_reserved_hours_as_not_all_free(crowded, sign_in):
    page = sign_in("alice@acme.example")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/orgs/acme/reservations/")
    strip = page.locator("section.strip[aria-label=dgx-h100]")
    cells = strip.locator(".cell")
    states = [cells.nth(i).get_attribute("class") for i in range(6)]
    assert (cells.count(), states[0], states[5]) == (14 * 24, "cell part", "cell free")
