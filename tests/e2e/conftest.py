import os
import shutil

import pytest

from .browser import signed_in

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")


@pytest.fixture(scope="session")
def browser():
    if not shutil.which(CHROMIUM):
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install chromium (.ci/run does)")
    # Playwright's sync API runs an event loop in this thread; the ORM calls of the test data
    # fixtures happen before any page is driven.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url)
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


@pytest.fixture
def sign_in(page):
    from ..factories import PASSWORD

    def as_user(email: str):
        return signed_in(page, email, PASSWORD)

    return as_user


@pytest.fixture
def open_as(browser, live_server):
    """A page of its own browser context, signed in as ``email``: two people at two screens (a
    tenant and an operator) without signing each other out."""
    from ..factories import PASSWORD

    contexts = []

    def open_page(email: str, password: str = PASSWORD):
        context = browser.new_context(base_url=live_server.url)
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15_000)
        return signed_in(page, email, password)

    yield open_page
    for context in contexts:
        context.close()


@pytest.fixture
def demo(transactional_db, request):
    """The data `make demo` seeds (cluster, acme with alice and bob, quotas, catalog, an
    operator); returns the demo password. The other organizations' recorded days only for a
    test marked ``demo_history``: simulating them is most of the seed's time."""
    import io

    from django.core.management import call_command

    from portal.management.commands.seed_demo import DEMO_PASSWORD

    without_history = request.node.get_closest_marker("demo_history") is None
    call_command("seed_demo", without_history=without_history, stdout=io.StringIO())
    return DEMO_PASSWORD


@pytest.fixture(scope="session")
def oidc_provider(live_server):
    """A running OpenID Connect provider whose one client is the live server's portal."""
    from .oidc import node_missing, provider_started

    if reason := node_missing():
        pytest.skip(reason)
    process, provider = provider_started(live_server.url)
    yield provider
    process.terminate()
    process.wait(timeout=10)


@pytest.fixture
def sso(settings, oidc_provider):
    """The portal with the provider configured (as PORTAL_OIDC_PROVIDERS would)."""
    settings.SOCIALACCOUNT_PROVIDERS = oidc_provider.portal_apps()
    return oidc_provider
