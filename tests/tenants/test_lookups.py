"""The organization and project a request's URL names, as every console page and API endpoint
reaches them: through the caller's memberships, another tenant's a 404."""

import pytest
from django.test import RequestFactory

from portal.errors import NotFound
from tenants.lookups import organization_of, project_of

pytestmark = pytest.mark.django_db


def request_by(user):
    request = RequestFactory().get("/")
    request.user = user
    return request


def test_a_project_reached_by_its_url_carries_the_callers_role_in_its_organization(vic, ai_dev):
    project = project_of(request_by(vic), "acme", "ai-dev")
    assert (project, project.organization.my_role) == (ai_dev, "viewer")


def test_a_project_reached_by_its_url_is_one_query(vic, ai_dev, django_assert_num_queries):
    with django_assert_num_queries(1):
        assert project_of(request_by(vic), "acme", "ai-dev").organization.slug == "acme"


def test_another_tenant_gets_a_404_for_a_project_by_its_url(bruno, ai_dev):
    with pytest.raises(NotFound, match="No such organization"):
        project_of(request_by(bruno), "acme", "ai-dev")


def test_a_member_gets_a_404_for_a_project_the_organization_does_not_have(mia, ai_dev):
    with pytest.raises(NotFound, match="No such project"):
        project_of(request_by(mia), "acme", "nope")


def test_an_organization_reached_by_its_url_carries_the_callers_role(alice, acme):
    assert organization_of(request_by(alice), "acme").my_role == "owner"


def test_another_tenant_gets_a_404_for_an_organization_by_its_url(bruno, acme):
    with pytest.raises(NotFound):
        organization_of(request_by(bruno), "acme")
