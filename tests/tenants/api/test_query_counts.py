"""List endpoints lock their query count: it does not grow with the rows listed (no N+1)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tenants import services
from tenants.permissions import Caller

from ...factories import MembershipFactory, ProjectFactory

pytestmark = pytest.mark.django_db

ORG = "/api/v1/organizations/acme"

# endpoint: queries for a session-authenticated list, whatever the number of rows
LOCKED = {
    "/api/v1/organizations/": 4,
    f"{ORG}/members/": 6,
    f"{ORG}/invitations/": 6,
    f"{ORG}/projects/": 5,
    f"{ORG}/tokens/": 6,
    f"{ORG}/audit-events/": 6,
    "/api/v1/me/memberships/": 3,
}


def add_rows(organization, owner, count: int) -> None:
    caller = Caller(user=owner)
    for _ in range(count):
        membership = MembershipFactory(organization=organization)
        ProjectFactory(organization=organization)
        services.member_invite(
            caller=caller,
            organization=organization,
            email=f"invitee-{membership.pk}@x.example",
            role="member",
        )
        services.token_issue(caller=caller, organization=organization, name="t")


def queries_for(client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


@pytest.mark.parametrize("url", list(LOCKED))
def test_a_list_takes_the_same_queries_for_many_rows_as_for_one(url, alice, acme, api_as):
    client = api_as(alice)
    add_rows(acme, alice, 1)
    queries_for(client, url)  # warm the session and content-type caches
    few = queries_for(client, url)
    add_rows(acme, alice, 6)
    assert (few, queries_for(client, url)) == (LOCKED[url], LOCKED[url])
