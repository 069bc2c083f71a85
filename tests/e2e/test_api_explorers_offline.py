"""The API explorers in Chromium with every request to another host cut off: they render the
portal's operations, and not one request left the portal."""

from urllib.parse import urlsplit

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize(
    ("path", "rendered"),
    [
        ("/api/docs/", ".swagger-ui .opblock-tag"),
        ("/api/redoc/", "[role=navigation] li, .menu-content li"),
    ],
)
def test_an_explorer_works_without_internet(page, live_server, path, rendered):
    portal = urlsplit(live_server.url).netloc
    elsewhere: list[str] = []

    def only_the_portal(route):
        if urlsplit(route.request.url).netloc == portal:
            route.continue_()
        else:
            elsewhere.append(route.request.url)
            route.abort()

    page.route("**/*", only_the_portal)
    page.goto(path)
    page.wait_for_selector(rendered)
    assert elsewhere == []
