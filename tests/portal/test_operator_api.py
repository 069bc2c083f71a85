"""The operator API as a whole: composed under /api/v1/operator/ from each app's endpoints,
each under the tag "operator" in the schema and in a permission matrix of its app, and the
same 404 as an unknown path to every caller but an operator."""

import re

import pytest
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from ..billing.api.test_operator_permission_matrix import OPERATIONS as BILLING
from ..scheduling.api.test_operator_permission_matrix import OPERATIONS as SCHEDULING

OP = "/api/v1/operator"


@pytest.fixture(scope="module")
def schema() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)


def operator_operations(schema: dict) -> set[tuple[str, str]]:
    return {
        (method, path)
        for path, methods in schema["paths"].items()
        for method in methods
        if path.startswith(f"{OP}/")
    }


def as_schema_path(path: str) -> str:
    """A matrix's path as the schema writes it: ids as parameters, no query."""
    return re.sub(r"\{\{(\w+)\}\}", "{id}", path.split("?")[0])


def test_every_operator_endpoint_is_tagged_operator_and_no_other_is(schema):
    tagged = {
        (method, path)
        for path, methods in schema["paths"].items()
        for method, operation in methods.items()
        if "operator" in operation["tags"]
    }
    assert tagged == operator_operations(schema)
    assert all(
        operation["tags"] == ["operator"] and operation["operationId"].startswith("operator_")
        for path, methods in schema["paths"].items()
        if path.startswith(f"{OP}/")
        for operation in methods.values()
    )


def test_every_operator_endpoint_is_in_a_permission_matrix(schema):
    def shape(path: str) -> str:
        return re.sub(r"\{\w+\}", "{id}", path)

    documented = {(method, shape(path)) for method, path in operator_operations(schema)}
    tested = {
        (method, shape(as_schema_path(path)))
        for method, path, *_ in (*SCHEDULING.values(), *BILLING.values())
    }
    # The matrices name objects by their names where the paths take one (a node, a class, a
    # tier, an organization, a month's year and number, an export's format).
    tested = {
        (method, re.sub(r"/(dgx-h100-01|L4|batch|globex|2026|11|csv)(?=/)", "/{id}", path))
        for method, path in tested
    }
    assert documented == tested


@pytest.mark.django_db
def test_a_tenant_token_gets_the_404_of_a_path_that_does_not_exist(acme, alice, token_for):
    _, client = token_for(alice, acme)
    real = client.get(f"{OP}/nodes/")
    unknown = client.get(f"{OP}/no-such-thing/")
    assert real.status_code == unknown.status_code == 404
    assert real.json()["error"]["message"] == f"No API endpoint at {OP}/nodes/."


@pytest.mark.django_db
def test_a_method_an_endpoint_does_not_take_is_a_404_to_others_and_a_405_to_operators(ops):
    _, operator = ops
    assert APIClient().delete(f"{OP}/nodes/").status_code == 404
    assert operator.delete(f"{OP}/nodes/").status_code == 405


@pytest.mark.django_db
def test_a_token_that_is_not_valid_is_a_401_as_everywhere():
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer gcp_000000000000_nothing")
    assert client.get(f"{OP}/nodes/").status_code == 401
