"""Who calls the operator API, and what each gets: the operator API exists for staff only (an
operator token, or a staff user signed in); to everyone else every path is a 404, as a path
that does not exist is (not a 401 or a 403: nothing says the operator API is there)."""

from rest_framework.test import APIClient

from tenants import services
from tenants.permissions import Caller

from .factories import MembershipFactory, UserFactory

# Each caller of the matrix: anonymous; acme's members through their tenant tokens; a staff
# user through a tenant token (no operator scope); a staff user signed in; an operator token.
CALLERS = [
    "anonymous",
    "owner",
    "admin",
    "member",
    "viewer",
    "staff_tenant_token",
    "staff_session",
    "operator",
]
OPERATORS = {"staff_session", "operator"}


def expected_status(caller: str, success: int) -> int:
    return success if caller in OPERATORS else 404


def operator_token_client(user) -> APIClient:
    """A client with a new operator token of ``user`` (staff), issued as the admin page does."""
    _, secret = services.operator_token_issue(caller=Caller(user=user), name="ops")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def operator_api_caller(caller: str, actors: dict, acme, token_for) -> APIClient:
    """The client of ``caller``, one of ``CALLERS``: each cell of a matrix calls as one, so
    only its token or session is made."""
    if caller == "anonymous":
        return APIClient()
    if caller in ("owner", "admin", "member", "viewer"):
        return token_for(actors[caller], acme, "read" if caller == "viewer" else "write")[1]
    if caller == "staff_tenant_token":
        staff = UserFactory(email="sam@ops.example", is_staff=True)
        MembershipFactory(organization=acme, user=staff, role="owner")
        return token_for(staff, acme, "write")[1]
    if caller == "staff_session":
        client = APIClient()
        client.force_login(UserFactory(email="sid@ops.example", is_staff=True))
        return client
    assert caller == "operator"
    return operator_token_client(UserFactory(email="oli@ops.example", is_staff=True))


def assert_reached_only_by_operators(operation: tuple, caller: str, ids: dict, client: APIClient):
    """One cell of an operator API's permission matrix: ``operation`` (method, path with ids
    to fill, body, status for an operator) called by ``caller`` through its ``client``."""
    method, path, body, success = operation
    response = getattr(client, method)(path.format(**ids), body, format="json")
    assert response.status_code == expected_status(caller, success), response.content
    if response.status_code == 404:
        assert response.json()["error"]["code"] == "not_found"
