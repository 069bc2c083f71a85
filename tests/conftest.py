"""The actors of every tenancy test.

Organization "acme" has alice (owner), adam (admin), mia (member) and vic (viewer); "globex" has
bruno (owner), who must never see acme's objects; otto belongs to no organization.
"""

import os

import pytest
from hypothesis import settings
from rest_framework.test import APIClient

from tenants import services
from tenants.models import Role
from tenants.permissions import Caller

from .factories import MembershipFactory, OrganizationFactory, ProjectFactory, UserFactory
from .operators import operator_token_client

# Property tests: "dev" (the default) keeps `make test` quick and repeatable, a few examples in
# the same order each run; "ci" (CI=true, as .ci/run runs) explores many, at random. The slow
# ones (marked `slow`) take their number of examples from here; HYPOTHESIS_PROFILE picks one.
settings.register_profile("dev", max_examples=5, derandomize=True)
settings.register_profile("ci", max_examples=30, print_blob=True)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") == "true" else "dev")
)


@pytest.fixture
def acme(db):
    return OrganizationFactory(slug="acme", name="Acme AI")


@pytest.fixture
def globex(db):
    return OrganizationFactory(slug="globex", name="Globex")


def _member(organization, email: str, role: str):
    return MembershipFactory(
        organization=organization, user=UserFactory(email=email), role=role
    ).user


@pytest.fixture
def alice(acme):
    return _member(acme, "alice@acme.example", Role.OWNER)


@pytest.fixture
def adam(acme):
    return _member(acme, "adam@acme.example", Role.ADMIN)


@pytest.fixture
def mia(acme):
    return _member(acme, "mia@acme.example", Role.MEMBER)


@pytest.fixture
def vic(acme):
    return _member(acme, "vic@acme.example", Role.VIEWER)


@pytest.fixture
def bruno(globex):
    return _member(globex, "bruno@globex.example", Role.OWNER)


@pytest.fixture
def otto(db):
    return UserFactory(email="otto@nowhere.example")


@pytest.fixture
def actors(alice, adam, mia, vic, bruno, otto):
    return {
        "owner": alice,
        "admin": adam,
        "member": mia,
        "viewer": vic,
        "foreign": bruno,
        "outsider": otto,
    }


@pytest.fixture
def ai_dev(acme):
    return ProjectFactory(organization=acme, slug="ai-dev", name="AI development")


@pytest.fixture
def api():
    return APIClient()


@pytest.fixture
def api_as():
    """A REST client signed in (session) as the given user; None for an anonymous one."""

    def make(user=None) -> APIClient:
        client = APIClient()
        if user is not None:
            client.force_login(user)
        return client

    return make


@pytest.fixture
def token_for():
    """Issue a real API token through the service; returns (token, client using it)."""

    def make(user, organization, scope="write", **kwargs):
        token, secret = services.token_issue(
            caller=Caller(user=user),
            organization=organization,
            name="automation",
            scope=scope,
            **kwargs,
        )
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        return token, client

    return make


@pytest.fixture
def ops(db):
    """olga, staff, with her operator token: a client of the operator API."""
    user = UserFactory(email="olga@ops.example", is_staff=True)
    return user, operator_token_client(user)
