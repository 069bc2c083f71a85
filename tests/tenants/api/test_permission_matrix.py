"""The permission matrix, cell by cell, through the REST API.

Each operation names the roles that may do it; every other role of the organization gets 403,
a member of another organization and a signed-in stranger get 404, an anonymous caller 401.
"""

import pytest

from tenants import services
from tenants.models import Role
from tenants.permissions import Caller

from ...factories import MembershipFactory, OrganizationFactory, UserFactory

pytestmark = pytest.mark.django_db

ALL = {"owner", "admin", "member", "viewer"}
MANAGERS = {"owner", "admin"}
OWNERS = {"owner"}

ORG = "/api/v1/organizations/acme"

# name: (method, path, body, roles allowed, status on success)
OPERATIONS = {
    "organization retrieve": ("get", f"{ORG}/", None, ALL, 200),
    "organization update": ("patch", f"{ORG}/", {"name": "Acme Two"}, MANAGERS, 200),
    "organization delete": ("delete", "/api/v1/organizations/empty/", None, OWNERS, 204),
    "sso update": (
        "put",
        f"{ORG}/sso/",
        {"provider": "", "domains": ["acme.example"]},
        OWNERS,
        200,
    ),
    "members list": ("get", f"{ORG}/members/", None, ALL, 200),
    "member role change": (
        "patch",
        f"{ORG}/members/{{target}}/",
        {"role": "viewer"},
        MANAGERS,
        200,
    ),
    "member promote to owner": (
        "patch",
        f"{ORG}/members/{{target}}/",
        {"role": "owner"},
        OWNERS,
        200,
    ),
    "member remove": ("delete", f"{ORG}/members/{{target}}/", None, MANAGERS, 204),
    "invitations list": ("get", f"{ORG}/invitations/", None, MANAGERS, 200),
    "invitation create": (
        "post",
        f"{ORG}/invitations/",
        {"email": "new@acme.example", "role": "member"},
        MANAGERS,
        201,
    ),
    "owner invitation create": (
        "post",
        f"{ORG}/invitations/",
        {"email": "boss@acme.example", "role": "owner"},
        OWNERS,
        201,
    ),
    "projects list": ("get", f"{ORG}/projects/", None, ALL, 200),
    "project create": (
        "post",
        f"{ORG}/projects/",
        {"slug": "vision", "name": "Vision"},
        MANAGERS,
        201,
    ),
    "project retrieve": ("get", f"{ORG}/projects/ai-dev/", None, ALL, 200),
    "project update": ("patch", f"{ORG}/projects/ai-dev/", {"name": "Dev"}, MANAGERS, 200),
    "project delete": ("delete", f"{ORG}/projects/ai-dev/", None, MANAGERS, 204),
    "tokens list": ("get", f"{ORG}/tokens/", None, ALL, 200),
    "read token issue": ("post", f"{ORG}/tokens/", {"name": "ci", "scope": "read"}, ALL, 201),
    "write token issue": (
        "post",
        f"{ORG}/tokens/",
        {"name": "ci", "scope": "write"},
        {"owner", "admin", "member"},
        201,
    ),
    "audit events list": ("get", f"{ORG}/audit-events/", None, MANAGERS, 200),
    "invitation revoke": ("post", f"{ORG}/invitations/{{invitation}}/revoke/", None, MANAGERS, 200),
}

CALLERS = ["owner", "admin", "member", "viewer", "foreign", "outsider", "anonymous"]


def expected_status(operation: str, caller: str) -> int:
    *_, allowed, success = OPERATIONS[operation]
    if caller == "anonymous":
        return 401
    if caller in ("foreign", "outsider"):
        return 404
    return success if caller in allowed else 403


@pytest.fixture
def world(actors, acme, ai_dev):
    target = MembershipFactory(
        organization=acme, user=UserFactory(email="tara@acme.example"), role=Role.MEMBER
    )
    # "empty" has no projects, so that its owner may delete it; every actor holds the same role
    # there as in acme.
    empty = OrganizationFactory(slug="empty")
    for role in ("owner", "admin", "member", "viewer"):
        MembershipFactory(organization=empty, user=actors[role], role=role)
    invitation = services.member_invite(
        caller=Caller(user=actors["owner"]), organization=acme, email="ivy@x.example", role="member"
    )
    return {"target": target.pk, "invitation": invitation.pk}


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_each_role_gets_exactly_what_the_matrix_allows(operation, caller, world, actors, api_as):
    method, path, body, *_ = OPERATIONS[operation]
    client = api_as(None if caller == "anonymous" else actors[caller])
    response = getattr(client, method)(path.format(**world), body, format="json")
    assert response.status_code == expected_status(operation, caller), response.content
    if response.status_code >= 400:
        assert set(response.json()["error"]) == {"code", "message", "fields"}
