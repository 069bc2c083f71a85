"""Query parameters: each endpoint takes those its schema lists (and `format`); any other is a
400 naming it, as is a filter value that is not one, never silently ignored."""

import pytest
from drf_spectacular.generators import SchemaGenerator

from ..factories import UserFactory

pytestmark = pytest.mark.django_db


# A value of each type of path parameter that its route takes.
PLACEHOLDERS = {"uuid": "00000000-0000-0000-0000-000000000000", "integer": "2026", "string": "x1"}


def _reads() -> list[tuple[str, set[str]]]:
    """Every GET of the schema, its path with placeholders filled, and the query parameters
    it documents."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    reads = []
    for path, methods in schema["paths"].items():
        if "get" not in methods:
            continue
        parameters = methods["get"].get("parameters", [])
        for parameter in parameters:
            if parameter["in"] == "path":
                kind = parameter["schema"].get("format") or parameter["schema"]["type"]
                path = path.replace(f"{{{parameter['name']}}}", PLACEHOLDERS[kind])
        reads.append((path, {p["name"] for p in parameters if p["in"] == "query"}))
    return reads


READS = _reads()


@pytest.fixture
def caller_of_path(alice, api_as):
    """A client that reaches the path: alice for the tenant API, staff for the operator API."""
    staff = api_as(UserFactory(email="olga@ops.example", is_staff=True))
    return lambda path: staff if path.startswith("/api/v1/operator/") else api_as(alice)


@pytest.mark.parametrize(("path", "documented"), READS, ids=[path for path, _ in READS])
def test_an_unknown_query_parameter_is_a_400_naming_it_on_every_read(
    caller_of_path, path, documented
):
    response = caller_of_path(path).get(path, {"bogus": "1"})
    assert (response.status_code, list(response.json()["error"]["fields"])) == (400, ["bogus"])


@pytest.mark.parametrize(("path", "documented"), READS, ids=[path for path, _ in READS])
def test_the_message_lists_what_the_endpoint_takes(caller_of_path, path, documented):
    [message] = caller_of_path(path).get(path, {"bogus": "1"}).json()["error"]["fields"]["bogus"]
    listed = message.rsplit(": ", 1)[1].rstrip(".")
    assert set(listed.split(", ")) - {"none"} == documented


def test_page_ordering_and_format_stay_allowed(alice, api_as):
    response = api_as(alice).get(
        "/api/v1/organizations/acme/orders/",
        {"page": "1", "page_size": "10", "ordering": "-created_at", "format": "json"},
    )
    assert response.status_code == 200


def test_the_documented_parameters_of_an_endpoint_without_a_list_are_taken(alice, api_as):
    response = api_as(alice).get("/api/v1/organizations/acme/reservation-timeline/?days=2")
    assert response.status_code == 200


def test_an_unknown_parameter_on_a_write_is_a_400_too(alice, api_as):
    response = api_as(alice).post(
        "/api/v1/organizations/acme/projects/?dry_run=1",
        {"name": "Web", "slug": "web"},
        format="json",
    )
    assert (response.status_code, list(response.json()["error"]["fields"])) == (400, ["dry_run"])


@pytest.mark.parametrize(
    "query",
    ["since=2026-11-30T09:00:00", "since=2026-11-30", "until=2026-11-30 09:00"],
)
def test_an_audit_time_without_its_utc_offset_is_a_400_naming_the_parameter(alice, api_as, query):
    response = api_as(alice).get(f"/api/v1/organizations/acme/audit-events/?{query}")
    field = query.split("=")[0]
    assert (response.status_code, list(response.json()["error"]["fields"])) == (400, [field])


def test_an_audit_time_with_its_offset_is_taken(alice, api_as):
    response = api_as(alice).get(
        "/api/v1/organizations/acme/audit-events/", {"since": "2026-11-30T09:00+02:00"}
    )
    assert response.status_code == 200
