"""The console in headless Chromium: what a tenant user does on their first day."""

from pathlib import Path

import pytest

from tenants.models import ApiToken, Project

from .browser import ARTIFACTS, l4_inference_form, l4_training_submitted, signed_in

pytestmark = pytest.mark.e2e


def test_an_owner_signs_in_and_creates_a_project(alice, acme, sign_in):
    page = sign_in("alice@acme.example")
    page.click("text=Acme AI")
    page.click("summary:has-text('New project')")
    page.fill("input[name=name]", "Computer vision")
    page.fill("input[name=slug]", "vision")
    page.click("button[name=create_project]")
    page.wait_for_selector("text=Project vision created")
    assert page.locator("td code", has_text="acme-vision").count() == 1
    assert Project.objects.get(slug="vision").created_by == alice


def test_a_bad_slug_is_explained_next_to_the_field(alice, acme, sign_in):
    page = sign_in("alice@acme.example")
    page.goto("/orgs/acme/")
    page.click("summary:has-text('New project')")
    page.fill("input[name=name]", "Bad")
    page.fill("input[name=slug]", "Bad_Slug")
    page.click("button[name=create_project]")
    assert "Use lowercase letters" in page.locator(".errorlist").first.inner_text()
    assert not Project.objects.exists()


def test_a_member_issues_a_token_and_sees_its_secret_once(mia, acme, sign_in):
    page = sign_in("mia@acme.example")
    page.goto("/orgs/acme/tokens/")
    page.fill("input[name=name]", "laptop")
    page.click("text=Issue token")
    secret = page.locator("#issued-secret").inner_text()
    assert secret.startswith(f"gcp_{ApiToken.objects.get().prefix}_")
    page.reload()
    assert page.locator("#issued-secret").count() == 0


def test_a_member_submits_a_gpu_workload_and_sees_it_queued(mia, acme, ai_dev, sign_in):

    from django.conf import settings

    from scheduling import services
    from scheduling.models import GpuClass, QuotaGrant, Workload

    services.cluster_description_apply(path=Path(settings.PORTAL_SIMULATED_CLUSTER))
    QuotaGrant.objects.create(
        organization=acme, gpu_class=GpuClass.objects.get(name="L4"), guarantee=4, limit=4
    )
    page = sign_in("mia@acme.example")
    form = l4_inference_form(page, name="resnet-eval", gpus="1")
    form.locator("input[name=replicas]").fill("2")
    page.click("button:has-text('Submit')")
    page.wait_for_selector("text=Workload resnet-eval submitted")
    assert page.locator(".state", has_text="Pending").count() == 1
    submitted = Workload.objects.get(name="resnet-eval")
    # The requeue box is checked unless the member unticks it.
    assert (submitted.replicas, submitted.requeue_on_eviction) == (2, True)


def test_an_owner_reserves_gpus_on_a_phone_without_sideways_scrolling(alice, acme, sign_in):
    from datetime import timedelta

    from django.conf import settings

    from portal import clock
    from scheduling import services
    from scheduling.backends import simulated_backend
    from scheduling.models import Reservation

    description = Path(settings.PORTAL_SIMULATED_CLUSTER)
    services.cluster_description_apply(path=description)
    services.inventory_sync(backend=simulated_backend(description_path=description))
    page = sign_in("alice@acme.example")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/orgs/acme/reservations/")
    start = (clock.now() + timedelta(days=2)).strftime("%Y-%m-%dT%H:00")
    page.select_option("select[name=gpu_class]", "L4")
    page.fill("input[name=gpus]", "4")
    page.fill("input[name=starts_at]", start)
    page.click("button:has-text('Reserve')")
    page.wait_for_selector("text=it awaits an operator's approval")
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert (Reservation.objects.get().gpus, overflow <= 0) == (4, True)


@pytest.mark.parametrize(
    ("email", "path"),
    [
        ("alice@acme.example", "/"),
        ("alice@acme.example", "/orgs/acme/"),
        ("alice@acme.example", "/orgs/acme/dashboard/"),
        ("alice@acme.example", "/orgs/acme/projects/ai-dev/"),
        ("alice@acme.example", "/orgs/acme/projects/ai-dev/workloads/"),
        ("alice@acme.example", "/orgs/acme/projects/ai-dev/workloads/llama-finetune/"),
        ("alice@acme.example", "/orgs/acme/quotas/"),
        ("alice@acme.example", "/orgs/acme/reservations/"),
        ("alice@acme.example", "/orgs/acme/catalog/"),
        ("alice@acme.example", "/orgs/acme/orders/"),
        ("alice@acme.example", "/orgs/acme/invoices/"),
        ("alice@acme.example", "/orgs/acme/usage/"),
        ("alice@acme.example", "/orgs/acme/budgets/"),
        ("alice@acme.example", "/orgs/acme/tokens/"),
        ("alice@acme.example", "/orgs/acme/audit/"),
        ("ops@example.com", "/staff/cluster/"),
        ("ops@example.com", "/staff/insights/"),
        ("ops@example.com", "/staff/approvals/"),
        ("ops@example.com", "/staff/metering/"),
    ],
)
def test_every_console_page_fits_a_phone(page, email, path):
    """Seeded as `make demo` seeds them, each page filled, at 390 px: no sideways scroll. A
    screenshot of each goes to var/test-artifacts/ (to look at, not compared)."""
    import io

    from django.core.management import call_command

    from portal.management.commands.seed_demo import DEMO_PASSWORD

    call_command("seed_demo", stdout=io.StringIO())
    page.set_viewport_size({"width": 390, "height": 844})
    signed_in(page, email, DEMO_PASSWORD)
    response = page.goto(path)
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    name = path.strip("/").replace("/", "_") or "home"
    page.screenshot(path=str(ARTIFACTS / f"phone_{name}.png"), full_page=True)
    assert (response.status, overflow <= 0) == (200, True)


def test_a_workloads_page_follows_it_from_pending_to_succeeded_without_a_reload(
    mia, acme, ai_dev, sign_in
):
    """The live part of the page refreshes itself (htmx, every 5 s) while the scheduler admits
    the workload and the cluster reports it running, then done."""

    from portal import clock
    from scheduling import services
    from scheduling.models import Workload

    backend = l4_training_submitted(
        user=mia, organization=acme, project=ai_dev, name="live", runtime_seconds=60
    )
    page = sign_in("mia@acme.example")
    page.goto("/orgs/acme/projects/ai-dev/workloads/live/")
    page.wait_for_selector("#workload-live .state.pending")
    page.evaluate("window.openedOnce = true")  # a reload would forget it
    result = services.scheduling_cycle_run()
    for admitted in result.admitted:
        services.workload_launch(workload_id=admitted, backend=backend)
    page.wait_for_selector("#workload-live .state.admitted", timeout=20_000)
    # The simulated cluster reports the pod running once it has started (5 s on its clock).
    clock.advance(seconds=10)
    services.workloads_sync(backend=backend)
    assert Workload.objects.get(name="live").state == Workload.State.RUNNING
    page.wait_for_selector("#workload-live .state.running", timeout=20_000)
    clock.advance(seconds=120)  # past its simulated runtime
    services.workloads_sync(backend=backend)
    page.wait_for_selector("#workload-live .state.succeeded", timeout=20_000)
    assert page.evaluate("window.openedOnce") is True


def test_an_owner_downloads_an_invoice_and_its_pdf_shows_the_total(page):
    """The demo's draft (its cancellation charge), downloaded from the Invoices page as a user
    clicks it, read back as a PDF."""
    import io

    from django.core.management import call_command
    from pypdf import PdfReader

    from billing.models import Invoice
    from portal.management.commands.seed_demo import DEMO_PASSWORD

    call_command("seed_demo", stdout=io.StringIO())
    signed_in(page, "alice@acme.example", DEMO_PASSWORD)
    page.goto("/orgs/acme/invoices/")
    with page.expect_download() as download:
        page.click("text=PDF")
    text = PdfReader(download.value.path()).pages[0].extract_text()
    total = Invoice.objects.get(organization__slug="acme").total
    assert (download.value.suggested_filename.endswith(".pdf"), f"{total:.2f}" in text) == (
        True,
        True,
    )


def test_the_showback_page_fits_a_phone(page, settings):
    """Where the operator offers showback, the demo's owner reads hers at 390 px from the
    usage page's link: no sideways scroll."""
    import io

    from django.core.management import call_command

    from portal.management.commands.seed_demo import DEMO_PASSWORD

    settings.PORTAL_BOOKS_SHOWBACK = "cost"
    settings.PORTAL_BOOKS_IDLE_SHARING = "guarantees"
    call_command("seed_demo", stdout=io.StringIO())
    page.set_viewport_size({"width": 390, "height": 844})
    signed_in(page, "alice@acme.example", DEMO_PASSWORD)
    page.goto("/orgs/acme/usage/")
    page.get_by_role("link", name="Showback").click()
    page.wait_for_url("**/orgs/acme/showback/")
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    page.screenshot(path=str(ARTIFACTS / "phone_showback.png"), full_page=True)
    assert page.get_by_role("heading", name="Showback of").is_visible()
    assert overflow <= 0
