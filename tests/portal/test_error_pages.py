"""Console errors are pages of the console (its frame, what happened, what to do), not bare
text; the API keeps answering JSON."""

import pytest
from django.contrib.staticfiles import finders
from django.test import RequestFactory

from portal.views import server_error

pytestmark = pytest.mark.django_db

FRAME = 'class="topbar"'


def test_a_missing_page_is_a_styled_404(alice, client):
    client.force_login(alice)
    response = client.get("/no-such-page/")
    assert (response.status_code, FRAME in response.text, "Not found" in response.text) == (
        404,
        True,
        True,
    )


def test_a_page_the_role_does_not_allow_is_a_styled_403(mia, client):
    client.force_login(mia)
    response = client.get("/orgs/acme/invoices/")
    assert (response.status_code, FRAME in response.text, "Not allowed" in response.text) == (
        403,
        True,
        True,
    )


def test_a_wrong_method_is_a_styled_405_that_names_the_allowed_one(alice, acme, client):
    client.force_login(alice)
    membership = acme.memberships.get(user=alice)
    response = client.get(f"/orgs/acme/members/{membership.pk}/role/")
    assert (response.status_code, response["Allow"], FRAME in response.text) == (
        405,
        "POST",
        True,
    )


def test_the_api_keeps_its_json_405(alice, api_as):
    response = api_as(alice).put("/api/v1/organizations/")
    assert (response.status_code, response["Content-Type"]) == (405, "application/json")


def test_a_server_error_is_a_styled_500_without_the_requests_context():
    response = server_error(RequestFactory().get("/orgs/acme/"))
    assert (response.status_code, FRAME in response.content.decode()) == (500, True)


def test_the_favicon_is_the_portals_own(client):
    response = client.get("/favicon.ico")
    assert (response.status_code, finders.find("portal/favicon.svg") is not None) == (301, True)
