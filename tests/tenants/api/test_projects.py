import pytest

from tenants.models import Project

from ...factories import ProjectFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/organizations/acme/projects/"


def test_creating_returns_the_project_and_its_namespace(adam, acme, api_as):
    response = api_as(adam).post(URL, {"slug": "vision", "name": "Vision"}, format="json")
    assert response.status_code == 201
    assert response.json()["namespace"] == "acme-vision"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"slug": "UPPER", "name": "X"}, "slug"),
        ({"slug": "x", "name": "X"}, "slug"),
        ({"slug": "a" * 33, "name": "X"}, "slug"),
        ({"slug": "ok", "name": ""}, "name"),
        ({"slug": "ok", "name": "X", "description": "d" * 2001}, "description"),
        ({"slug": "ok", "name": "X", "namespace": "kube-system"}, "namespace"),
        ({"slug": ["ok"], "name": "X"}, "slug"),
    ],
)
def test_invalid_input_is_a_400_naming_the_field_and_creates_nothing(
    alice, acme, api_as, body, field
):
    response = api_as(alice).post(URL, body, format="json")
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]
    assert not Project.objects.exists()


def test_a_duplicate_slug_is_a_400_on_the_slug(alice, ai_dev, api_as):
    response = api_as(alice).post(URL, {"slug": "ai-dev", "name": "Again"}, format="json")
    assert response.status_code == 400
    assert "slug" in response.json()["error"]["fields"]


def test_a_foreign_tenant_cannot_read_a_project_even_knowing_its_slug(bruno, ai_dev, api_as):
    response = api_as(bruno).get(f"{URL}ai-dev/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_a_foreign_tenants_project_of_the_same_slug_is_not_mixed_in(alice, ai_dev, globex, api_as):
    ProjectFactory(organization=globex, slug="ai-dev")
    response = api_as(alice).get(URL)
    assert [p["organization"] for p in response.json()["results"]] == ["acme"]


def test_the_list_searches_by_name_or_slug(alice, acme, api_as):
    ProjectFactory(organization=acme, slug="vision", name="Computer vision")
    ProjectFactory(organization=acme, slug="speech", name="Speech")
    response = api_as(alice).get(URL, {"search": "vis"})
    assert [p["slug"] for p in response.json()["results"]] == ["vision"]


def test_the_list_orders_by_a_requested_field(alice, acme, api_as):
    ProjectFactory(organization=acme, slug="aaa", name="Zed")
    ProjectFactory(organization=acme, slug="zzz", name="Alpha")
    response = api_as(alice).get(URL, {"ordering": "name"})
    assert [p["slug"] for p in response.json()["results"]] == ["zzz", "aaa"]


def test_the_list_is_paginated(alice, acme, api_as):
    for n in range(3):
        ProjectFactory(organization=acme, slug=f"p{n}")
    body = api_as(alice).get(URL, {"page_size": 2}).json()
    assert (body["count"], len(body["results"]), body["next"] is not None) == (3, 2, True)


def test_updating_changes_the_name_but_never_the_namespace(alice, ai_dev, api_as):
    response = api_as(alice).patch(f"{URL}ai-dev/", {"name": "Dev"}, format="json")
    assert response.status_code == 200
    ai_dev.refresh_from_db()
    assert (ai_dev.name, ai_dev.namespace) == ("Dev", "acme-ai-dev")


def test_renaming_the_slug_is_refused(alice, ai_dev, api_as):
    response = api_as(alice).patch(f"{URL}ai-dev/", {"slug": "other"}, format="json")
    assert response.status_code == 400
    assert "slug" in response.json()["error"]["fields"]
