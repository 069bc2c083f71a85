"""The actors of every tenancy test.

Organization "acme" has alice (owner), adam (admin), mia (member) and vic (viewer); "globex" has
bruno (owner), who must never see acme's objects; otto belongs to no organization.
"""

import os
from uuid import uuid4

import pytest
from django.conf import settings as django_settings
from django.test import override_settings
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


@pytest.fixture(autouse=True)
def cache_of_its_own():
    """Each test starts with an empty cache of its own: the cache (Redis in CI) outlives a
    test and is shared by the suite's processes, and what one test kept there (an ended month's
    books, say) under a key that another test's rows make again must not answer the other."""
    cache = {**django_settings.CACHES["default"], "KEY_PREFIX": f"test-{uuid4().hex}"}
    with override_settings(CACHES={"default": cache}):
        yield


# Each actor's e-mail and role in the organization named (otto: in none).
ACTORS = {
    "owner": ("alice@acme.example", "acme", Role.OWNER),
    "admin": ("adam@acme.example", "acme", Role.ADMIN),
    "member": ("mia@acme.example", "acme", Role.MEMBER),
    "viewer": ("vic@acme.example", "acme", Role.VIEWER),
    "foreign": ("bruno@globex.example", "globex", Role.OWNER),
    "outsider": ("otto@nowhere.example", None, None),
}
ORGANIZATIONS = {"acme": "Acme AI", "globex": "Globex"}


def organization_create(slug: str):
    return OrganizationFactory(slug=slug, name=ORGANIZATIONS[slug])


def actor_create(actor: str, organization=None):
    """The user of ``actor`` (a key of ACTORS), a member of ``organization`` in its role."""
    email, _, role = ACTORS[actor]
    user = UserFactory(email=email)
    if organization is not None:
        MembershipFactory(organization=organization, user=user, role=role)
    return user


def tenancy_create() -> dict:
    """acme, globex and every actor, for state that a module builds once (the fixtures below
    build them per test): {"acme": ..., "globex": ..., "actors": {...}}."""
    organizations = {slug: organization_create(slug) for slug in ORGANIZATIONS}
    actors = {
        actor: actor_create(actor, organizations.get(organization))
        for actor, (_, organization, _) in ACTORS.items()
    }
    return {**organizations, "actors": actors}


@pytest.fixture
def acme(db):
    return organization_create("acme")


@pytest.fixture
def globex(db):
    return organization_create("globex")


@pytest.fixture
def alice(acme):
    return actor_create("owner", acme)


@pytest.fixture
def adam(acme):
    return actor_create("admin", acme)


@pytest.fixture
def mia(acme):
    return actor_create("member", acme)


@pytest.fixture
def vic(acme):
    return actor_create("viewer", acme)


@pytest.fixture
def bruno(globex):
    return actor_create("foreign", globex)


@pytest.fixture
def otto(db):
    return actor_create("outsider")


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


def ai_dev_create(acme):
    return ProjectFactory(organization=acme, slug="ai-dev", name="AI development")


@pytest.fixture
def ai_dev(acme):
    return ai_dev_create(acme)


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
