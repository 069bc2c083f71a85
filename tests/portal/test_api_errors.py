"""Every API failure has one shape, and bad input is a 4xx, never a 500."""

import json

import pytest
from django.conf import settings
from rest_framework.test import APIClient

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


@pytest.mark.parametrize("ordering", ["namespace;drop", "x", "", "name,", " name"])
def test_an_ordering_by_anything_but_the_listed_fields_is_a_400_naming_it(
    alice, acme, api_as, ordering
):
    response = api_as(alice).get(PROJECTS, {"ordering": ordering})
    assert response.status_code == 400
    assert list(error_of(response)["fields"]) == ["ordering"]


def test_an_ordering_by_listed_fields_orders_the_list(alice, acme, api_as):
    for slug in ("b-two", "a-one"):
        api_as(alice).post(PROJECTS, {"slug": slug, "name": slug}, format="json")
    response = api_as(alice).get(PROJECTS, {"ordering": "-name,slug"})
    assert [p["slug"] for p in response.json()["results"]] == ["b-two", "a-one"]


def test_the_openapi_schema_is_served(api):
    response = api.get("/api/schema/")
    assert response.status_code == 200
    assert b"/api/v1/organizations/{org_slug}/projects/" in response.content


def test_the_health_check_answers_ok(client):
    assert client.get("/healthz").json() == {"status": "ok"}


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/organizations/",
        PROJECTS,
        "/api/v1/organizations/acme/tokens/",
        "/api/v1/organizations/acme/invitations/",
        "/api/v1/organizations/acme/projects/ai-dev/workloads/",
    ],
)
def test_options_on_a_collection_is_a_405_in_the_error_shape(alice, ai_dev, token_for, url):
    _, client = token_for(alice, ai_dev.organization)
    response = client.options(url)
    assert (response.status_code, error_of(response)["code"]) == (405, "method_not_allowed")
    assert "OPTIONS" not in response["Allow"]


def test_an_unknown_ordering_of_quotas_is_a_400_not_a_500(alice, acme, api_as):
    response = api_as(alice).get("/api/v1/organizations/acme/quotas/", {"ordering": "x"})
    assert (response.status_code, list(error_of(response)["fields"])) == (400, ["ordering"])


def test_a_body_nested_100000_deep_is_a_400(alice, acme, api_as):
    body = "[" * 100_000 + "]" * 100_000
    response = api_as(alice).post(PROJECTS, body, content_type="application/json")
    assert (response.status_code, error_of(response)["code"]) == (400, "malformed_request")


def test_a_body_nested_deeper_than_32_levels_is_a_400(alice, acme, api_as):
    body = '{"slug": "p1", "name": ' + "[" * 40 + "]" * 40 + "}"
    response = api_as(alice).post(PROJECTS, body, content_type="application/json")
    assert (response.status_code, error_of(response)["code"]) == (400, "malformed_request")


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_a_write_to_an_unknown_api_path_is_a_json_404_not_the_csrf_page(alice, method):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(alice)
    response = getattr(client, method)("/api/v1/nothing-here/", {}, format="json")
    assert (response.status_code, error_of(response)["code"]) == (404, "not_found")


def test_a_request_django_refuses_before_any_view_is_a_json_400_under_api(client):
    response = client.get("/api/v1/organizations/", HTTP_HOST="evil.example")
    assert (response.status_code, error_of(response)["code"]) == (400, "bad_request")


def test_a_body_over_the_upload_limit_is_a_413_in_the_error_shape(alice, acme, token_for):
    _, client = token_for(alice, acme)
    body = json.dumps({"slug": "p1", "name": "x" * settings.DATA_UPLOAD_MAX_MEMORY_SIZE})
    response = client.post(PROJECTS, body, content_type="application/json")
    assert (response.status_code, error_of(response)["code"]) == (413, "request_too_large")
    assert not Project.objects.exists()


@pytest.mark.parametrize("page", ["abc", "0", "-1", "1.5", ""])
def test_a_page_that_is_not_a_whole_number_from_1_is_a_400_naming_page(alice, acme, api_as, page):
    response = api_as(alice).get(PROJECTS, {"page": page})
    assert response.status_code == 400
    assert list(error_of(response)["fields"]) == ["page"]


@pytest.mark.parametrize("size", ["abc", "0", "501", "-5"])
def test_a_page_size_outside_1_to_500_is_a_400_naming_page_size(alice, acme, api_as, size):
    response = api_as(alice).get(PROJECTS, {"page_size": size})
    assert response.status_code == 400
    assert list(error_of(response)["fields"]) == ["page_size"]


def test_a_page_past_the_last_however_large_is_a_404(alice, acme, api_as):
    response = api_as(alice).get(PROJECTS, {"page": "9" * 30})
    assert (response.status_code, error_of(response)["code"]) == (404, "not_found")


def test_a_page_size_of_500_is_served(alice, acme, api_as):
    assert api_as(alice).get(PROJECTS, {"page_size": 500}).status_code == 200


@pytest.mark.parametrize("name", [5, 5.5, True, ["P"], {"n": "P"}])
def test_a_value_that_is_not_a_string_where_a_string_is_expected_is_a_400(
    alice, acme, api_as, name
):
    response = api_as(alice).post(PROJECTS, {"slug": "p1", "name": name}, format="json")
    assert response.status_code == 400
    assert error_of(response)["fields"] == {"name": ["Not a valid string."]}
    assert not Project.objects.exists()


@pytest.mark.parametrize("status", ["", "archived"])
def test_a_filter_value_outside_its_enum_even_empty_is_a_400_naming_it(alice, acme, api_as, status):
    response = api_as(alice).get("/api/v1/organizations/", {"status": status})
    assert response.status_code == 400
    assert list(error_of(response)["fields"]) == ["status"]


def test_a_slug_with_a_trailing_newline_is_a_400(alice, acme, api_as):
    response = api_as(alice).post(PROJECTS, {"slug": "p1\n", "name": "P"}, format="json")
    assert response.status_code == 400
    assert "slug" in error_of(response)["fields"]
