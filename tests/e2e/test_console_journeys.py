"""Whole journeys through the console in headless Chromium, and the console driven by the
keyboard alone.

Journeys: a visitor signs up, verifies the address from the mail and creates an organization and
a project; an owner orders from the catalog, an operator approves, the owner sees it fulfilled; an
operator approves a reservation (booking one is `test_console_in_browser`'s phone test).
Keyboard: every form submits with Tab, typing and Enter or Space; every control has a label and
a focus indicator; Tab visits every control in document order and leaves the page at the end.
A screenshot of each step goes to var/test-artifacts/ (to look at, not compared)."""

import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings

from ..factories import h100_reservation_offered
from .browser import ARTIFACTS, signed_in, too_big_waits

pytestmark = pytest.mark.e2e

TIMES = "\N{MULTIPLICATION SIGN}"  # as the console writes quantities: "8 <TIMES> H100"


def shoot(page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"journey_{name}.png"), full_page=True)


def l4_requested(user, organization, *, gpus: int) -> None:
    """``user`` asks for ``gpus`` L4s from tomorrow 09:00 UTC for two hours."""
    from scheduling import services
    from tenants.permissions import Caller

    services.reservations_request(
        caller=Caller(user=user),
        organization=organization,
        request=services.ReservationRequest(
            gpu_class="L4",
            gpus=gpus,
            starts_at=tomorrow_at_nine(),
            ends_at=tomorrow_at_nine() + timedelta(hours=2),
        ),
    )


def tomorrow_at_nine():
    from portal import clock

    return (clock.now() + timedelta(days=1)).replace(hour=9, minute=0, second=0, microsecond=0)


# -- Fixtures -----------------------------------------------------------------------------------


@pytest.fixture
def operator(transactional_db):
    """A staff user, not a superuser: the approvals page is an operator's, not admin's."""
    from ..factories import UserFactory

    return UserFactory(email="ops@example.com", is_staff=True)


@pytest.fixture
def cluster(transactional_db):
    """The demo's simulated nodes (64 H100 in pool dgx-h100, L4s, A100s with MIG)."""
    from scheduling import services
    from scheduling.backends import simulated_backend

    description = Path(settings.PORTAL_SIMULATED_CLUSTER)
    services.cluster_description_apply(path=description)
    services.inventory_sync(backend=simulated_backend(description_path=description))


@pytest.fixture
def reserved_h100(operator, cluster):
    """Reserved H100-hours at 2.4650, in the catalog since yesterday, approved by an operator."""
    return h100_reservation_offered(operator)


# -- Journeys -----------------------------------------------------------------------------------


def test_a_visitor_signs_up_verifies_and_creates_an_organization_and_a_project(
    page, mailoutbox, transactional_db
):
    from allauth.account.models import EmailAddress

    from tenants.models import Membership, Project, Role

    page.goto("/accounts/signup/")
    shoot(page, "signup_1_form")
    page.fill("input[name=email]", "nora@newco.example")
    page.fill("input[name=password1]", "a-long-gpu-password-2026")
    page.fill("input[name=password2]", "a-long-gpu-password-2026")
    page.click("button[type=submit]")
    page.wait_for_url("**/accounts/confirm-email/")
    shoot(page, "signup_2_verification_sent")
    # Not in before the address is verified.
    page.goto("/")
    assert "/accounts/login/" in page.url

    (message,) = mailoutbox
    link = re.search(r"https?://\S+/accounts/confirm-email/\S+/", message.body).group(0)
    assert message.to == ["nora@newco.example"]
    page.goto(link)
    shoot(page, "signup_3_confirm")
    page.click("button[type=submit]")
    page.wait_for_load_state()
    shoot(page, "signup_4_confirmed")
    assert EmailAddress.objects.get(email="nora@newco.example").verified

    signed_in(page, "nora@newco.example", "a-long-gpu-password-2026")
    assert page.locator(".who").inner_text() == "nora@newco.example"
    shoot(page, "signup_5_no_organization_yet")

    page.fill("input[name=name]", "NewCo Research")
    page.fill("input[name=slug]", "newco")
    page.fill("input[name=billing_email]", "billing@newco.example")
    page.click("button:has-text('Create organization')")
    page.wait_for_selector("text=Organization NewCo Research created")
    shoot(page, "signup_6_organization")
    page.click("summary:has-text('New project')")
    page.fill("input[name=name]", "Speech models")
    page.fill("input[name=slug]", "speech")
    page.click("button[name=create_project]")
    page.wait_for_selector("text=Project speech created")
    shoot(page, "signup_7_project")

    project = Project.objects.get(slug="speech")
    owner = Membership.objects.get(organization__slug="newco")
    assert (
        project.organization.slug,
        project.namespace,
        owner.user.email,
        owner.role,
        page.locator("td code", has_text="newco-speech").count(),
    ) == ("newco", "newco-speech", "nora@newco.example", Role.OWNER, 1)


def test_an_owner_orders_from_the_catalog_and_sees_it_fulfilled_once_an_operator_approves(
    alice, acme, operator, reserved_h100, open_as
):
    from billing import tasks
    from billing.models import Order
    from scheduling.models import Reservation

    tenant = open_as("alice@acme.example")
    tenant.goto("/orgs/acme/")
    tenant.click("a:text-is('Catalog')")
    row = tenant.locator("tr", has_text="H100 reserved")
    assert "2.4650" in row.inner_text()
    shoot(tenant, "order_1_catalog")

    # The catalog page has no link to ordering yet: back through the organization.
    tenant.click("text=← Acme AI")
    tenant.click("a:text-is('Orders')")
    tenant.select_option("select[name=item]", "h100-reserved")
    tenant.fill("input[name=quantity]", "8")
    tenant.fill("input[name=starts_at]", tomorrow_at_nine().strftime("%Y-%m-%dT%H:%M"))
    tenant.fill("input[name=hours]", "4")
    shoot(tenant, "order_2_form")
    tenant.click("button:text-is('Order')")
    tenant.wait_for_selector(f"text=Ordered: 78.88 {settings.PORTAL_CURRENCY}, submitted.")
    ordered = tenant.locator("tr", has_text=f"8 {TIMES} H100 reserved").locator(".state")
    assert ordered.inner_text() == "Submitted"
    shoot(tenant, "order_3_submitted")

    staff = open_as("ops@example.com")
    staff.click("nav a:text-is('Approvals')")
    waiting = staff.locator("tr", has_text=f"8 {TIMES} H100 reserved")
    assert "Acme AI" in waiting.inner_text()
    shoot(staff, "order_4_waiting_for_an_operator")
    waiting.locator("button:text-is('Approve')").click()
    staff.wait_for_selector("text=Order approved")
    assert staff.locator("tr", has_text=f"8 {TIMES} H100 reserved").count() == 0
    shoot(staff, "order_5_approved")

    tenant.reload()
    state = tenant.locator("tr", has_text=f"8 {TIMES} H100 reserved").locator(".state")
    assert state.inner_text() == "Approved"
    shoot(tenant, "order_6_approved")

    # What the Celery worker does with the task the approval queued.
    order = Order.objects.get()
    tasks.order_fulfil(order_id=str(order.pk))
    tenant.reload()
    assert state.inner_text() == "Fulfilled"
    shoot(tenant, "order_7_fulfilled")
    tenant.click("text=← Acme AI")
    tenant.click("a:text-is('Reservations')")
    held = tenant.locator("tr", has_text=f"8 {TIMES} H100-80GB")
    assert held.locator(".state").inner_text() == "Approved"
    shoot(tenant, "order_8_reservation_held")
    order.refresh_from_db()
    assert (order.state, Reservation.objects.get().gpus) == (Order.State.FULFILLED, 8)


def test_an_operator_approves_a_reservation_and_the_owner_sees_it_approved(
    alice, acme, operator, cluster, open_as
):
    from scheduling.models import Reservation

    l4_requested(alice, acme, gpus=2)
    tenant = open_as("alice@acme.example")
    tenant.goto("/orgs/acme/reservations/")
    mine = tenant.locator("tr", has_text=f"2 {TIMES} L4").locator(".state")
    assert mine.inner_text() == "Requested"
    shoot(tenant, "reservation_1_requested")

    staff = open_as("ops@example.com")
    staff.goto("/staff/approvals/")
    waiting = staff.locator("tr", has_text=f"2 {TIMES} L4")
    shoot(staff, "reservation_2_waiting_for_an_operator")
    waiting.locator("button:text-is('Approve')").click()
    staff.wait_for_selector("text=Reservation approved")
    shoot(staff, "reservation_3_approved")

    tenant.reload()
    shoot(tenant, "reservation_4_owner_sees_it_approved")
    assert (mine.inner_text(), Reservation.objects.get().state) == (
        "Approved",
        Reservation.State.APPROVED,
    )


# -- The keyboard alone -------------------------------------------------------------------------

ACTIVE = """() => {
  const el = document.activeElement;
  if (!el || el === document.body || el === document.documentElement) return null;
  return {tag: el.tagName.toLowerCase(), type: el.type || '', name: el.name || '',
          text: (el.innerText || el.value || '').trim().slice(0, 60),
          inForm: !!el.closest('[data-keyboard-target]')};
}"""


def keyboard_submit(page, form: str, steps, submit_with: str = "Enter") -> list[str]:
    """Drive the form matching the CSS selector ``form`` from the keyboard alone: Tab from the
    top of the page to each field of ``steps`` in turn ((name, keys): text to type, "choose:X"
    to pick an option by typing its label, "toggle" for Space, "datetime:<datetime>" to type a
    date and time segment by segment, "open" to open a <details> from its summary), then Tab to
    the form's submit button and press ``submit_with``. Once focus has entered the form it
    must stay inside it; returns the names focused on the way, in order."""
    marked = page.evaluate(
        "(selector) => { const form = document.querySelector(selector);"
        " if (form) form.dataset.keyboardTarget = 'yes'; return !!form; }",
        form,
    )
    assert marked, f"no form {form} on {page.url}"
    visited: list[str] = []
    entered = False

    def tab_until(matches, what: str):
        nonlocal entered
        for _ in range(120):
            page.keyboard.press("Tab")
            active = page.evaluate(ACTIVE)
            if active is None:
                continue
            if entered:
                assert active["inForm"], f"Tab left the form for {active} before {what}"
            entered = entered or active["inForm"]
            label = active["name"] or active["text"]
            if not visited or visited[-1] != label:
                visited.append(label)
            if matches(active):
                return active
        raise AssertionError(f"Tab never reached {what} on {page.url}; visited {visited}")

    for name, keys in steps:
        if keys == "open":  # a <details> summary holding the form
            tab_until(lambda a, name=name: a["tag"] == "summary" and name in a["text"], name)
            page.keyboard.press("Enter")
            continue
        tab_until(lambda a, name=name: a["inForm"] and a["name"] == name, name)
        if keys == "toggle":
            page.keyboard.press("Space")
        elif keys.startswith("choose:"):
            page.keyboard.type(keys.removeprefix("choose:"))
        elif keys.startswith("datetime:"):
            from datetime import datetime

            moment = datetime.fromisoformat(keys.removeprefix("datetime:"))
            # Chromium's en-US field: month, day, year (up to six digits, so an arrow moves
            # on), hour, minute, AM/PM.
            page.keyboard.type(moment.strftime("%m%d%Y"))
            page.keyboard.press("ArrowRight")
            page.keyboard.type(moment.strftime("%I%M") + moment.strftime("%p")[0])
        else:
            page.keyboard.press("ControlOrMeta+a")
            page.keyboard.type(keys)
    tab_until(lambda a: a["inForm"] and a["tag"] == "button" and a["type"] == "submit", "submit")
    page.keyboard.press(submit_with)
    page.wait_for_load_state()
    return visited


def test_signing_in_works_from_the_keyboard_alone(page, alice):
    from ..factories import PASSWORD

    page.goto("/accounts/login/")
    keyboard_submit(
        page,
        "form[action='/accounts/login/']",
        [("login", "alice@acme.example"), ("password", PASSWORD)],
    )
    page.wait_for_selector(".who")
    shoot(page, "keyboard_sign_in")
    assert page.locator(".who").inner_text() == "alice@acme.example"


def test_signing_up_works_from_the_keyboard_alone(page, mailoutbox, transactional_db):
    from django.contrib.auth import get_user_model

    page.goto("/accounts/signup/")
    visited = keyboard_submit(
        page,
        "form[action='/accounts/signup/']",
        [
            ("email", "kim@keys.example"),
            ("password1", "typed-by-keyboard-only"),
            ("password2", "typed-by-keyboard-only"),
        ],
        submit_with="Space",
    )
    page.wait_for_url("**/accounts/confirm-email/")
    shoot(page, "keyboard_sign_up")
    assert (
        [name for name in visited if name.startswith(("email", "password"))],
        get_user_model().objects.filter(email="kim@keys.example").exists(),
        len(mailoutbox),
    ) == (["email", "password1", "password2"], True, 1)


def test_creating_an_organization_works_from_the_keyboard_alone(alice, acme, sign_in):
    from tenants.models import Organization

    page = sign_in("alice@acme.example")
    keyboard_submit(
        page,
        "form:has(input[name=billing_email])",
        [("name", "Keyboard Labs"), ("slug", "keys"), ("billing_email", "pay@keys.example")],
    )
    page.wait_for_selector("text=Organization Keyboard Labs created")
    shoot(page, "keyboard_organization")
    assert Organization.objects.get(slug="keys").memberships.get().user == alice


def test_creating_a_project_works_from_the_keyboard_alone(alice, acme, sign_in):
    from tenants.models import Project

    page = sign_in("alice@acme.example")
    page.goto("/orgs/acme/")
    keyboard_submit(
        page,
        "form:has(button[name=create_project])",
        [
            ("New project", "open"),
            ("name", "Keyboard"),
            ("slug", "keys"),
            ("description", "Made without a mouse."),
        ],
    )
    page.wait_for_selector("text=Project keys created")
    shoot(page, "keyboard_project")
    assert Project.objects.get(slug="keys").description == "Made without a mouse."


def test_inviting_a_member_works_from_the_keyboard_alone(alice, acme, sign_in):
    from tenants.models import Invitation, Role

    page = sign_in("alice@acme.example")
    page.goto("/orgs/acme/")
    keyboard_submit(
        page,
        "form:has(button[name=invite])",
        [("Invite someone", "open"), ("email", "new@acme.example"), ("role", "choose:Viewer")],
        submit_with="Space",
    )
    page.wait_for_selector("text=Invitation sent to new@acme.example")
    shoot(page, "keyboard_invitation")
    assert Invitation.objects.get(email="new@acme.example").role == Role.VIEWER


def test_changing_a_members_role_works_from_the_keyboard_alone(alice, mia, acme, sign_in):
    from tenants.models import Role

    page = sign_in("alice@acme.example")
    page.goto("/orgs/acme/")
    keyboard_submit(page, "form[action*='/role/']", [("role", "choose:Admin")])
    shoot(page, "keyboard_member_role")
    assert mia.memberships.get().role == Role.ADMIN


def test_issuing_a_token_works_from_the_keyboard_alone(mia, acme, sign_in):
    from tenants.models import ApiToken

    page = sign_in("mia@acme.example")
    page.goto("/orgs/acme/tokens/")
    expiry = (tomorrow_at_nine() + timedelta(days=30)).replace(tzinfo=None)
    keyboard_submit(
        page,
        "form:has(input[name=expires_at])",
        [
            ("name", "ci"),
            ("scope", "choose:Read and write"),
            ("expires_at", f"datetime:{expiry}"),
        ],
    )
    page.wait_for_selector("#issued-secret")
    shoot(page, "keyboard_token")
    token = ApiToken.objects.get()
    assert (token.name, token.scope, token.expires_at.replace(tzinfo=None)) == (
        "ci",
        "write",
        expiry,
    )


def test_submitting_a_workload_works_from_the_keyboard_alone(demo, open_as):
    from scheduling.models import Workload

    page = open_as("alice@acme.example", demo)
    page.goto("/orgs/acme/projects/ai-dev/workloads/")
    keyboard_submit(
        page,
        "form:has(input[name=image])",
        [
            ("name", "typed-job"),
            ("kind", "choose:Batch"),
            ("tier", "choose:batch"),
            ("image", "nvcr.io/nvidia/pytorch:25.01-py3"),
            ("gpu_class", "choose:L4"),
            ("gpus", "1"),
            ("replicas", "2"),
            ("requeue_on_eviction", "toggle"),
        ],
        submit_with="Space",
    )
    page.wait_for_selector("text=Workload typed-job submitted")
    shoot(page, "keyboard_workload")
    typed = Workload.objects.get(name="typed-job")
    assert (typed.kind, typed.replicas, typed.requeue_on_eviction) == (
        "batch-inference",
        2,
        False,
    )


def test_reserving_gpus_works_from_the_keyboard_alone(demo, open_as):
    from scheduling.models import Reservation

    before = set(Reservation.objects.values_list("pk", flat=True))
    page = open_as("alice@acme.example", demo)
    page.goto("/orgs/acme/reservations/")
    starts = (tomorrow_at_nine() + timedelta(days=3)).replace(tzinfo=None)
    keyboard_submit(
        page,
        "form:has(input[name=weeks])",
        [
            ("gpu_class", "choose:L4"),
            ("gpus", "2"),
            ("starts_at", f"datetime:{starts}"),
            ("hours", "3"),
        ],
    )
    page.wait_for_selector("text=it awaits an operator's approval")
    shoot(page, "keyboard_reservation")
    (made,) = Reservation.objects.exclude(pk__in=before)
    assert (made.gpu_class.name, made.gpus, made.starts_at.replace(tzinfo=None)) == (
        "L4",
        2,
        starts,
    )


def test_ordering_works_from_the_keyboard_alone(alice, acme, reserved_h100, sign_in):
    from billing.models import Order

    page = sign_in("alice@acme.example")
    page.goto("/orgs/acme/orders/")
    starts = tomorrow_at_nine().replace(tzinfo=None)
    keyboard_submit(
        page,
        "form:has(select[name=item])",
        [
            ("item", "choose:H100 reserved"),
            ("quantity", "2"),
            ("starts_at", f"datetime:{starts}"),
            ("hours", "5"),
        ],
    )
    page.wait_for_selector("text=Ordered:")
    shoot(page, "keyboard_order")
    order = Order.objects.get()
    assert (order.quantity, order.starts_at.replace(tzinfo=None), order.state) == (
        2,
        starts,
        Order.State.SUBMITTED,
    )


def test_setting_a_budget_works_from_the_keyboard_alone(alice, acme, sign_in):
    from billing.models import Budget

    page = sign_in("alice@acme.example")
    page.goto("/orgs/acme/budgets/")
    keyboard_submit(
        page,
        "form:has(input[name=monthly_amount])",
        [("monthly_amount", "2500"), ("thresholds", "75, 100"), ("hard_stop", "toggle")],
    )
    page.wait_for_selector("text=Budget set:")
    shoot(page, "keyboard_budget")
    budget = Budget.objects.get()
    assert (budget.monthly_amount, budget.thresholds, budget.hard_stop) == (2500, [75, 100], True)


def test_asking_for_quota_works_from_the_keyboard_alone(demo, open_as):
    from scheduling.models import QuotaRequest

    before = set(QuotaRequest.objects.values_list("pk", flat=True))
    page = open_as("alice@acme.example", demo)
    page.goto("/orgs/acme/quotas/")
    keyboard_submit(
        page,
        "form:has(textarea[name=reason])",
        [("gpu_class", "choose:L4"), ("amount", "2"), ("reason", "A keyboard-only launch.")],
    )
    shoot(page, "keyboard_quota_request")
    (asked,) = QuotaRequest.objects.exclude(pk__in=before)
    assert (asked.gpu_class.name, asked.amount, asked.reason) == (
        "L4",
        2,
        "A keyboard-only launch.",
    )


def test_an_operator_approves_from_the_keyboard_alone(alice, acme, operator, cluster, sign_in):
    from scheduling.models import Reservation

    l4_requested(alice, acme, gpus=1)
    page = sign_in("ops@example.com")
    page.goto("/staff/approvals/")
    keyboard_submit(page, "form[action$='/approve/']", [], submit_with="Space")
    page.wait_for_selector("text=Reservation approved")
    shoot(page, "keyboard_approval")
    assert Reservation.objects.get().state == Reservation.State.APPROVED


def test_an_operator_rejects_with_a_reason_from_the_keyboard_alone(
    alice, acme, operator, reserved_h100, sign_in
):
    from billing import services
    from billing.models import Order
    from tenants.permissions import Caller

    services.order_create(
        caller=Caller(user=alice),
        organization=acme,
        request=services.OrderRequest(
            item="h100-reserved",
            quantity=1,
            starts_at=tomorrow_at_nine(),
            ends_at=tomorrow_at_nine() + timedelta(hours=1),
        ),
    )
    page = sign_in("ops@example.com")
    page.goto("/staff/approvals/")
    keyboard_submit(page, "form[action$='/reject/']", [("reason", "No H100 until March.")])
    page.wait_for_selector("text=Order rejected")
    shoot(page, "keyboard_rejection")
    order = Order.objects.get()
    assert (order.state, order.decision_reason) == (Order.State.REJECTED, "No H100 until March.")


# Every page with controls, as an owner and as an operator sees it (the demo's data fills them).
OWNER_PAGES = [
    "/",
    "/orgs/acme/",
    "/orgs/acme/dashboard/",
    "/orgs/acme/projects/ai-dev/",
    "/orgs/acme/projects/ai-dev/workloads/",
    "/orgs/acme/projects/ai-dev/workloads/llama-finetune/",
    "/orgs/acme/quotas/",
    "/orgs/acme/reservations/",
    "/orgs/acme/catalog/",
    "/orgs/acme/orders/",
    "/orgs/acme/invoices/",
    "/orgs/acme/usage/",
    "/orgs/acme/budgets/",
    "/orgs/acme/tokens/",
    "/orgs/acme/audit/",
]
OPERATOR_PAGES = ["/staff/cluster/", "/staff/insights/", "/staff/approvals/", "/staff/metering/"]
VISITOR_PAGES = ["/accounts/login/", "/accounts/signup/", "/accounts/password/reset/"]


def each_console_page(browser, live_server, password):
    """(path, page) for every page of the console: a visitor's, the owner's, the operator's;
    every <details> opened so the forms in them count."""
    for email, paths in (
        (None, VISITOR_PAGES),
        ("alice@acme.example", OWNER_PAGES),
        ("ops@example.com", OPERATOR_PAGES),
    ):
        context = browser.new_context(base_url=live_server.url)
        page = context.new_page()
        if email:
            signed_in(page, email, password)
        for path in paths:
            response = page.goto(path)
            assert response.status == 200, path
            page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
            yield path, page
        context.close()


UNLABELLED = """() => [...document.querySelectorAll(
    'input:not([type=hidden]), select, textarea, button, a[href], summary')]
  .filter(el => el.checkVisibility())
  .filter(el => {
    const labelled = (el.labels && [...el.labels].some(l => l.innerText.trim()))
      || (el.getAttribute('aria-label') || '').trim()
      || (el.getAttribute('aria-labelledby') || '').trim()
      || (el.getAttribute('title') || '').trim();
    const named = ['BUTTON', 'A', 'SUMMARY'].includes(el.tagName)
      && (el.innerText.trim() || el.querySelector('img[alt], svg title'));
    const submit = el.tagName === 'INPUT' && ['submit', 'button'].includes(el.type) && el.value;
    return !(labelled || named || submit);
  })
  .map(el => el.outerHTML.slice(0, 120))"""


def test_every_console_control_has_an_accessible_label(browser, live_server, demo):
    """A field named by a <label for>, a wrapping label or aria-label; a button or link by its
    text: what a screen reader reads when Tab lands on it."""
    unlabelled = {}
    controls = 0
    for path, page in each_console_page(browser, live_server, demo):
        controls += page.locator("input:not([type=hidden]), select, textarea").count()
        missing = page.evaluate(UNLABELLED)
        if missing:
            unlabelled[path] = missing
    assert (unlabelled, controls > 40) == ({}, True)


STEP = """(step) => {
  const el = document.activeElement;
  if (!el || el === document.body || el === document.documentElement) return null;
  if (!el.dataset.tabStep) el.dataset.tabStep = String(step);
  const s = getComputedStyle(el);
  return {step: el.dataset.tabStep,
          what: el.outerHTML.replace(/ data-tab-step="\\d+"/, '').slice(0, 100),
          focused: [s.outlineStyle, s.outlineWidth, s.outlineColor, s.boxShadow].join(' | '),
          visible: (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0)
                   || s.boxShadow !== 'none'};
}"""

UNFOCUSED = """() => Object.fromEntries(
  [...document.querySelectorAll('[data-tab-step]')].map(el => {
  const s = getComputedStyle(el);
  return [el.dataset.tabStep, [s.outlineStyle, s.outlineWidth, s.outlineColor, s.boxShadow]
    .join(' | ')];
}))"""

# What Tab should reach, in document order: every visible, enabled control, link and summary
# (with the step at which Tab reached it, or null).
TABBABLE = """() => [...document.querySelectorAll(
    'a[href], button, input:not([type=hidden]), select, textarea, summary, [tabindex]')]
  .filter(el => el.checkVisibility() && !el.disabled && el.tabIndex >= 0)
  .map(el => ({step: el.dataset.tabStep || null,
               what: el.outerHTML.replace(/ data-tab-step="\\d+"/, '').slice(0, 100)}))"""


def tab_through(page) -> tuple[list[dict], bool]:
    """Press Tab from the top until focus leaves the page or comes round to the first element
    (True), or is caught (False); each element focused once, in the order Tab reached it.
    Several presses on one element are the parts of a date field."""
    page.evaluate("document.activeElement && document.activeElement.blur()")
    reached: list[dict] = []
    for press in range(400):
        page.keyboard.press("Tab")
        active = page.evaluate(STEP, press)
        if active is None:
            if reached:
                return reached, True
            continue
        if reached and reached[-1]["step"] == active["step"]:
            continue
        if any(earlier["step"] == active["step"] for earlier in reached):
            # Round to the first element is leaving the page (the browser wraps without
            # stopping on its own interface); to any other, a trap.
            return reached, active["step"] == reached[0]["step"]
        reached.append(active)
    return reached, False


def test_every_focusable_control_shows_a_visible_focus_indicator(browser, live_server, demo):
    """Reached with Tab, each control, link and summary draws an outline or a shadow it does
    not draw unfocused."""
    invisible = {}
    focused = 0
    for path, page in each_console_page(browser, live_server, demo):
        reached, _ = tab_through(page)
        page.evaluate("document.activeElement && document.activeElement.blur()")
        unfocused = page.evaluate(UNFOCUSED)
        focused += len(reached)
        bad = [
            (step["what"], step["focused"])
            for step in reached
            if not step["visible"] or step["focused"] == unfocused[step["step"]]
        ]
        if bad:
            invisible[path] = bad
    assert (invisible, focused > 150) == ({}, True)


def test_tab_reaches_every_control_in_document_order_and_then_leaves_the_page(
    browser, live_server, demo
):
    """No control out of reach, no positive tabindex reordering the page, no trap."""
    problems = {}
    for path, page in each_console_page(browser, live_server, demo):
        reached, left = tab_through(page)
        expected = page.evaluate(TABBABLE)
        steps = [int(element["step"]) for element in expected if element["step"]]
        missed = [element["what"] for element in expected if not element["step"]]
        expected_steps = {element["step"] for element in expected}
        unexpected = [step["what"] for step in reached if step["step"] not in expected_steps]
        if not left or missed or unexpected or steps != sorted(steps):
            problems[path] = {
                "left the page": left,
                "missed": missed,
                "unexpected": unexpected,
                "in document order": steps == sorted(steps),
            }
        name = path.strip("/").replace("/", "_") or "home"
        page.screenshot(path=str(ARTIFACTS / f"keyboard_{name}.png"), full_page=True)
    assert problems == {}


def test_a_live_refresh_keeps_the_keyboard_focus_where_it_was(demo, open_as):
    """The workloads table refreshes itself every 5 s (htmx): a keyboard user on its State
    filter must still be there after the refresh."""
    page = open_as("alice@acme.example", demo)
    page.goto("/orgs/acme/projects/ai-dev/workloads/")
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.name") == "state":
            break
    page.evaluate(
        "window.refreshed = new Promise(resolve =>"
        " document.body.addEventListener('htmx:afterSettle', resolve, {once: true}))"
    )
    page.evaluate("window.refreshed")  # waits for the next refresh
    assert page.evaluate("document.activeElement.name") == "state"


def test_a_waiting_workload_shows_why_and_the_quota_numbers_behind_it(demo, open_as):
    """The demo's acme holds 16 of its 48 H100s (32 guaranteed); a 40-GPU job cannot fit its
    limit: its page says why, and the quota page shows the numbers that say so."""
    from scheduling.models import Workload

    too_big_waits()
    waiting = Workload.objects.get(name="too-big")
    page = open_as("alice@acme.example", demo)
    page.goto("/orgs/acme/projects/ai-dev/workloads/too-big/")
    reason = page.locator("#workload-live .card").first.inner_text()
    shoot(page, "pending_reason")
    page.goto("/orgs/acme/quotas/")
    row = page.locator("tr", has_text="H100-80GB").filter(has_text="organization").first
    cells = row.locator("td").all_inner_texts()
    shoot(page, "quota_numbers")
    assert (waiting.pending_message in reason, cells[2:5]) == (
        True,
        ["32 GPUs", "48 GPUs", "16 GPUs"],
    )
