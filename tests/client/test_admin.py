"""gpuctl admin against a live server's operator API, with an operator token (a staff user's,
of no organization): nodes (list, cordon, uncordon) and decisions on orders."""

import json

import pytest

from .conftest import ordered

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def operator_secret(demo):
    from django.contrib.auth import get_user_model

    from tenants.permissions import Caller
    from tenants.services import operator_token_issue

    ops = get_user_model().objects.get(email="ops@example.com")
    return operator_token_issue(caller=Caller(user=ops), name="gpuctl")[1]


@pytest.fixture
def as_operator(gpuctl, live_server, operator_secret):
    """gpuctl logged in with the operator token, in a context of its own."""
    result = gpuctl("login", live_server.url, "--token", operator_secret, "--context", "ops")
    assert result.exit_code == 0, result.output

    def run(*args: str):
        return gpuctl(*args, "--context", "ops")

    return run


def submitted_order(gpuctl) -> str:
    """An order of alice's for tomorrow, submitted: it waits for an operator."""
    result = ordered(gpuctl, "-o", "json", "--context", "acme", item="h100-80gb-reserved")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["id"]


def test_login_with_an_operator_token_stores_a_context_without_organization(
    as_operator, config_home
):
    import yaml

    config = yaml.safe_load((config_home / "gpuctl" / "config.yaml").read_text())
    assert config["contexts"]["ops"]["organization"] is None


def test_admin_nodes_ls_lists_every_pools_nodes(as_operator):
    nodes = json.loads(as_operator("admin", "nodes", "ls", "-o", "json").stdout)
    assert {"dgx-h100", "l4-inference"} <= {node["pool"] for node in nodes}


def test_a_node_is_cordoned_then_uncordoned(as_operator):
    cordoned = json.loads(
        as_operator("admin", "nodes", "cordon", "dgx-h100-01", "-o", "json").stdout
    )
    uncordoned = json.loads(
        as_operator("admin", "nodes", "uncordon", "dgx-h100-01", "-o", "json").stdout
    )
    assert (cordoned["cordoned"], uncordoned["cordoned"]) == (True, False)


def test_an_operator_approves_a_submitted_order(gpuctl, logged_in, as_operator):
    order = submitted_order(gpuctl)
    waiting = json.loads(
        as_operator("admin", "orders", "ls", "--state", "submitted", "-o", "json").stdout
    )
    approved = json.loads(as_operator("admin", "orders", "approve", order, "-o", "json").stdout)
    assert (order in [o["id"] for o in waiting], approved["state"]) == (True, "approved")


def test_an_operator_rejects_an_order_with_a_reason(gpuctl, logged_in, as_operator):
    order = submitted_order(gpuctl)
    result = as_operator(
        "admin", "orders", "reject", order, "--reason", "No capacity", "-o", "json"
    )
    rejected = json.loads(result.stdout)
    assert (rejected["state"], rejected["decision_reason"]) == ("rejected", "No capacity")


def test_rejecting_without_a_reason_is_bad_usage(as_operator):
    assert as_operator("admin", "orders", "reject", "some-id").exit_code == 2


def test_a_tenant_token_meets_no_operator_api_and_exits_1(gpuctl, logged_in):
    result = gpuctl("admin", "nodes", "ls")
    assert (result.exit_code, "(404 not_found)" in result.stderr) == (1, True)
