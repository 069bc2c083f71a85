import pytest
from django.test import override_settings

from tenants.models import ApiToken

from ...factories import MembershipFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/organizations/acme/tokens/"


def test_issuing_shows_the_secret_once(mia, api_as):
    client = api_as(mia)
    issued = client.post(URL, {"name": "ci", "scope": "write"}, format="json").json()
    listed = client.get(f"{URL}{issued['id']}/").json()
    assert issued["secret"].startswith("gcp_")
    assert "secret" not in listed


def test_a_bearer_token_authenticates_api_calls(mia, acme, token_for):
    _, client = token_for(mia, acme, scope="read")
    assert client.get("/api/v1/organizations/acme/projects/").status_code == 200


def test_a_read_token_cannot_write(alice, acme, token_for):
    _, client = token_for(alice, acme, scope="read")
    response = client.post(
        "/api/v1/organizations/acme/projects/", {"slug": "p1", "name": "P"}, format="json"
    )
    assert response.status_code == 403
    assert not acme.projects.exists()


def test_a_write_token_can_write(alice, acme, token_for):
    _, client = token_for(alice, acme, scope="write")
    response = client.post(
        "/api/v1/organizations/acme/projects/", {"slug": "p1", "name": "P"}, format="json"
    )
    assert response.status_code == 201


def test_a_token_reaches_only_its_own_organization(alice, acme, globex, token_for):
    MembershipFactory(organization=globex, user=alice, role="owner")
    _, client = token_for(alice, acme)
    assert client.get("/api/v1/organizations/globex/").status_code == 404
    assert [o["slug"] for o in client.get("/api/v1/organizations/").json()["results"]] == ["acme"]


def test_a_write_token_is_limited_by_its_owners_current_role(mia, acme, token_for):
    _, client = token_for(mia, acme, scope="write")
    mia.memberships.update(role="viewer")
    response = client.post(
        "/api/v1/organizations/acme/tokens/", {"name": "x", "scope": "write"}, format="json"
    )
    assert response.status_code == 403


def test_a_revoked_token_is_a_401_with_the_reason(mia, acme, token_for, api_as):
    token, client = token_for(mia, acme)
    api_as(mia).post(f"{URL}{token.pk}/revoke/")
    response = client.get("/api/v1/organizations/")
    assert response.status_code == 401
    assert "revoked" in response.json()["error"]["message"]


def test_a_revoked_token_stays_readable_as_revoked(mia, acme, token_for, api_as):
    token, _ = token_for(mia, acme)
    api_as(mia).post(f"{URL}{token.pk}/revoke/")
    assert api_as(mia).get(f"{URL}{token.pk}/").json()["state"] == "revoked"


def test_a_token_is_revoked_with_post_not_delete(mia, acme, token_for, api_as):
    token, _ = token_for(mia, acme)
    assert api_as(mia).delete(f"{URL}{token.pk}/").status_code == 405
    token.refresh_from_db()
    assert token.revoked_at is None


def test_a_garbage_bearer_header_is_a_401(api):
    api.credentials(HTTP_AUTHORIZATION="Bearer")
    assert api.get("/api/v1/organizations/").status_code == 401


def test_a_member_lists_only_their_own_tokens(mia, adam, acme, token_for, api_as):
    token_for(adam, acme)
    token_for(mia, acme)
    owners = {t["owner"] for t in api_as(mia).get(URL).json()["results"]}
    assert owners == {"mia@acme.example"}


def test_an_admin_lists_every_members_tokens(mia, adam, acme, token_for, api_as):
    token_for(mia, acme)
    owners = {t["owner"] for t in api_as(adam).get(URL).json()["results"]}
    assert owners == {"mia@acme.example"}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"scope": "read"}, "name"),
        ({"name": "x", "scope": "admin"}, "scope"),
        ({"name": "x", "expires_at": "tomorrow"}, "expires_at"),
        ({"name": "x", "expires_at": "2001-01-01T00:00:00Z"}, "expires_at"),
        ({"name": "n" * 101}, "name"),
    ],
)
def test_invalid_input_is_a_400_naming_the_field_and_issues_nothing(mia, api_as, body, field):
    response = api_as(mia).post(URL, body, format="json")
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]
    assert not ApiToken.objects.exists()


@override_settings(PORTAL_TOKEN_THROTTLE_RATE="2/hour")  # fixed windows: no boundary mid-test
def test_token_clients_are_throttled_with_a_429_and_retry_after(mia, acme, token_for):
    _, client = token_for(mia, acme, scope="read")
    responses = [client.get("/api/v1/organizations/") for _ in range(3)]
    assert [response.status_code for response in responses] == [200, 200, 429]
    assert responses[2].json()["error"]["code"] == "throttled"
    assert 0 < int(responses[2]["Retry-After"]) <= 3600


@override_settings(PORTAL_TOKEN_THROTTLE_RATE="1/min")
def test_console_sessions_are_not_throttled(mia, api_as):
    client = api_as(mia)
    assert [client.get("/api/v1/organizations/").status_code for _ in range(3)] == [200] * 3
