"""List endpoints lock their query count: it does not grow with the rows listed (no N+1)."""

import pytest

from tenants import services
from tenants.permissions import Caller

from ...factories import MembershipFactory, ProjectFactory
from ...queries import assert_list_queries

pytestmark = pytest.mark.django_db

ORG = "/api/v1/organizations/acme"

# endpoint: queries for a session-authenticated list, whatever the number of rows
LOCKED = {
    "/api/v1/organizations/": 4,
    f"{ORG}/members/": 5,
    f"{ORG}/invitations/": 5,
    f"{ORG}/projects/": 5,
    f"{ORG}/tokens/": 5,
    f"{ORG}/audit-events/": 5,
    "/api/v1/me/memberships/": 3,
}


@pytest.fixture
def add_rows(acme, alice):
    """A row more in each list: a member, a project, an invitation, a token (and their audit
    events); a membership of alice's in another organization."""
    caller = Caller(user=alice)

    def add(count: int) -> None:
        for _ in range(count):
            membership = MembershipFactory(organization=acme)
            MembershipFactory(user=alice)
            ProjectFactory(organization=acme)
            services.member_invite(
                caller=caller,
                organization=acme,
                email=f"invitee-{membership.pk}@x.example",
                role="member",
            )
            services.token_issue(caller=caller, organization=acme, name="t")

    return add


@pytest.mark.parametrize("url", list(LOCKED))
def test_a_list_takes_the_same_queries_for_many_rows_as_for_one(url, alice, api_as, add_rows):
    assert_list_queries(api_as(alice), url, add_rows=add_rows, queries=LOCKED[url])
