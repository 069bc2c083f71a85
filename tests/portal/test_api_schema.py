"""The OpenAPI schema says what the API does: errors, nullable fields, closed request bodies."""

import re

import pytest
from drf_spectacular.generators import SchemaGenerator

ERROR_REF = {"$ref": "#/components/schemas/Error"}


@pytest.fixture(scope="module")
def schema() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)


def operations(schema: dict):
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            yield f"{method.upper()} {path}", operation


def test_every_operation_documents_its_errors_in_the_one_error_shape(schema):
    missing = [
        (name, code)
        for name, operation in operations(schema)
        for code in ("400", "401", "403", "404", "409", "429")
        if operation["responses"].get(code, {}).get("content", {}).get("application/json")
        != {"schema": ERROR_REF}
    ]
    assert missing == []


def test_operations_with_a_body_document_413_and_415(schema):
    with_body = [operation for _, operation in operations(schema) if "requestBody" in operation]
    assert with_body
    assert all({"413", "415"} <= set(operation["responses"]) for operation in with_body)


def test_a_429_documents_its_retry_after_header(schema):
    _, operation = next(operations(schema))
    header = operation["responses"]["429"]["headers"]["Retry-After"]
    assert (header["required"], header["schema"]["type"]) == (True, "integer")


@pytest.mark.parametrize(
    ("component", "field"),
    [
        ("InvitationOutput", "accepted_by"),
        ("InvitationOutput", "invited_by"),
        ("AuditEventOutput", "via_token"),
        ("QuotaOutput", "project"),
        ("WorkloadOutput", "gpu_class"),
        ("WorkloadOutput", "submitted_by"),
        ("WorkloadOutput", "pending"),
        ("WorkloadOutput", "max_runtime_seconds"),
        ("ProjectOutput", "created_by"),
        ("TokenOutput", "expires_at"),
    ],
)
def test_a_field_that_can_be_null_is_marked_nullable(schema, component, field):
    properties = schema["components"]["schemas"][component]["properties"]
    assert properties[field].get("nullable") is True, properties[field]


def test_every_request_body_rejects_fields_it_does_not_declare(schema):
    bodies = [
        operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        for _, operation in operations(schema)
        if "requestBody" in operation
    ]
    components = schema["components"]["schemas"]
    open_bodies = [
        ref
        for ref in bodies
        if components[ref.rsplit("/", 1)[1]].get("additionalProperties") is not False
    ]
    assert bodies and open_bodies == []


def test_changing_a_members_role_requires_the_role_as_the_api_does(schema):
    operation = schema["paths"]["/api/v1/organizations/{org_slug}/members/{member_id}/"]["patch"]
    name = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert schema["components"]["schemas"][name.rsplit("/", 1)[1]]["required"] == ["role"]


def test_page_and_page_size_document_their_bounds(schema):
    operation = schema["paths"]["/api/v1/organizations/"]["get"]
    bounds = {
        p["name"]: (p["schema"].get("minimum"), p["schema"].get("maximum"))
        for p in operation["parameters"]
        if p["name"] in ("page", "page_size")
    }
    assert bounds == {"page": (1, None), "page_size": (1, 500)}


def test_free_strings_of_a_request_forbid_the_nul_character_as_the_api_does(schema):
    name = schema["components"]["schemas"]["ProjectCreateInputRequest"]["properties"]["name"]
    assert name["pattern"] == "^[^\\u0000]*$"


def _properties(schema: dict):
    for component, body in schema["components"]["schemas"].items():
        for field, prop in body.get("properties", {}).items():
            yield f"{component}.{field}", prop


def _accepts(prop: dict, value: str) -> bool:
    """Whether a string schema (or one of its alternatives) takes the value."""
    if "oneOf" in prop:
        return any(_accepts(branch, value) for branch in prop["oneOf"])
    return (
        prop.get("minLength", 0) <= len(value) <= prop.get("maxLength", 10**9)
        and re.search(prop.get("pattern", ""), value) is not None
    )


def _defaults(prop: dict):
    """The defaults a property states, at its top or in one of its alternatives."""
    for part in (prop, *prop.get("oneOf", ())):
        if isinstance(part.get("default"), str):
            yield part, part["default"]


def test_no_field_has_a_default_that_its_own_schema_refuses(schema):
    contradictions = [
        (name, default)
        for name, prop in _properties(schema)
        for part, default in _defaults(prop)
        if not (_accepts(prop, default) and _accepts(part, default))
    ]
    assert contradictions == []


@pytest.mark.parametrize("component", ["WorkloadSubmitInputRequest", "QuotaRequestInputRequest"])
def test_an_empty_mig_profile_is_allowed_by_the_schema(schema, component):
    prop = schema["components"]["schemas"][component]["properties"]["mig_profile"]
    assert _accepts(prop, "")


def test_a_gpu_classs_mig_profiles_are_typed_as_a_list_of_strings(schema):
    prop = schema["components"]["schemas"]["GpuClassOutput"]["properties"]["mig_profiles"]
    assert (prop["type"], prop["items"]["type"]) == ("array", "string")
