"""Every API failure has one shape, and bad input is a 4xx, never a 500."""

import pytest

from tenants.models import Project

pytestmark = pytest.mark.django_db

PROJECTS = "/api/v1/organizations/acme/projects/"


def error_of(response) -> dict:
    assert set(response.json()) == {"error"}
    return response.json()["error"]


def test_malformed_json_is_a_400_and_writes_nothing(alice, acme, api_as):
    response = api_as(alice).post(PROJECTS, '{"slug": "p1",', content_type="application/json")
    assert response.status_code == 400
    assert error_of(response)["code"] == "malformed_request"
    assert not Project.objects.exists()


def test_a_body_that_is_not_an_object_is_a_400(alice, acme, api_as):
    response = api_as(alice).post(PROJECTS, "[1, 2]", content_type="application/json")
    assert response.status_code == 400
    assert "non_field_errors" in error_of(response)["fields"]


def test_an_unsupported_media_type_is_a_415(alice, acme, api_as):
    response = api_as(alice).post(PROJECTS, "slug=p1", content_type="text/plain")
    assert (response.status_code, error_of(response)["code"]) == (415, "unsupported_media_type")


def test_an_unknown_field_is_named_in_the_error(alice, acme, api_as):
    response = api_as(alice).post(PROJECTS, {"slug": "p1", "name": "P", "gpus": 8}, format="json")
    assert response.status_code == 400
    assert error_of(response)["fields"] == {"gpus": ["Unknown field."]}


def test_a_validation_error_message_names_the_field(alice, acme, api_as):
    response = api_as(alice).post(PROJECTS, {"slug": "P 1", "name": "P"}, format="json")
    assert error_of(response)["message"].startswith("slug: ")


def test_an_unknown_api_path_is_a_json_404(alice, api_as):
    response = api_as(alice).get("/api/v1/nothing-here/")
    assert (response.status_code, error_of(response)["code"]) == (404, "not_found")


def test_a_wrong_method_is_a_405_in_the_error_shape(alice, acme, api_as):
    response = api_as(alice).put(PROJECTS, {}, format="json")
    assert (response.status_code, error_of(response)["code"]) == (405, "method_not_allowed")


def test_an_anonymous_caller_gets_a_401_in_the_error_shape(api):
    response = api.get("/api/v1/organizations/")
    assert (response.status_code, error_of(response)["code"]) == (401, "not_authenticated")


def test_a_page_beyond_the_last_is_a_404_in_the_error_shape(alice, acme, api_as):
    response = api_as(alice).get(PROJECTS, {"page": 9})
    assert (response.status_code, error_of(response)["code"]) == (404, "not_found")


def test_an_unknown_ordering_field_is_ignored_not_a_500(alice, acme, api_as):
    assert api_as(alice).get(PROJECTS, {"ordering": "namespace;drop"}).status_code == 200


def test_the_openapi_schema_is_served(api):
    response = api.get("/api/schema/")
    assert response.status_code == 200
    assert b"/api/v1/organizations/{org_slug}/projects/" in response.content


def test_the_health_check_answers_ok(client):
    assert client.get("/healthz").json() == {"status": "ok"}
