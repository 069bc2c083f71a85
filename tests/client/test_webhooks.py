"""gpuctl webhooks against a live server: alice (acme's owner) registers, reads, changes and
deletes endpoints, lists their deliveries with their last answer and redelivers one; acme's
viewer is refused (3), another organization's owner sees nothing (1)."""

import pytest

from .conftest import as_json

pytestmark = pytest.mark.django_db(transaction=True)

RECEIVER = "https://127.0.0.1:9/hooks/gpu"  # loopback: allowed by the operator setting here


@pytest.fixture
def hooks(gpuctl, logged_in, settings):
    settings.PORTAL_WEBHOOKS_ALLOW_PRIVATE = True
    return gpuctl


@pytest.fixture
def endpoint(hooks) -> dict:
    """An endpoint of acme's for workload state changes, as its registration answered."""
    return as_json(
        hooks(
            "webhooks",
            "create",
            "--url",
            RECEIVER,
            "--event",
            "workload.state_changed",
            "-o",
            "json",
        )
    )


def token_of(role: str, *, organization: str = "acme") -> str:
    """A token of a new user who is ``role`` in ``organization`` (made if it does not exist)."""
    from tenants.models import Organization
    from tenants.permissions import Caller
    from tenants.services import token_issue

    from ..factories import MembershipFactory

    org, _ = Organization.objects.get_or_create(slug=organization, defaults={"name": "Globex"})
    membership = MembershipFactory(organization=org, role=role)
    return token_issue(caller=Caller(user=membership.user), organization=org, name=role)[1]


def failed(endpoint_id: str) -> str:
    """A delivery of the endpoint that failed: its receiver last answered 500."""
    from portal import clock
    from webhooks.models import Endpoint

    from ..webhooks.conftest import failed_delivery

    return str(
        failed_delivery(
            Endpoint.objects.get(pk=endpoint_id),
            attempts=7,
            last_attempt_at=clock.wall(),
            last_status_code=500,
            last_response_body="receiver down",
        ).pk
    )


def test_create_shows_the_secret_once_and_get_only_its_hint(hooks, endpoint):
    assert endpoint["secret"].startswith("whsec_")
    shown = as_json(hooks("webhooks", "get", endpoint["id"], "-o", "json"))
    assert "secret" not in shown and endpoint["secret"].startswith(shown["secret_hint"].rstrip("…"))


def test_create_as_a_table_tells_to_store_the_secret(hooks):
    result = hooks("webhooks", "create", "--url", RECEIVER, "--event", "invoice.issued")
    assert result.exit_code == 0 and "whsec_" in result.stdout
    assert "Store the secret now" in result.stderr


def test_ls_lists_the_endpoints_as_a_table_json_and_yaml(hooks, endpoint):
    assert endpoint["id"] in hooks("webhooks", "ls").stdout
    assert [e["id"] for e in as_json(hooks("webhooks", "ls", "-o", "json"))] == [endpoint["id"]]
    assert f"id: {endpoint['id']}" in hooks("webhooks", "ls", "-o", "yaml").stdout


def test_update_pauses_and_replaces_the_event_types(hooks, endpoint):
    changed = as_json(
        hooks(
            "webhooks",
            "update",
            endpoint["id"],
            "--pause",
            "--event",
            "order.decided",
            "--event",
            "invoice.issued",
            "-o",
            "json",
        )
    )
    assert (changed["is_active"], sorted(changed["event_types"])) == (
        False,
        ["invoice.issued", "order.decided"],
    )


def test_update_with_nothing_to_change_is_bad_usage(hooks, endpoint):
    assert hooks("webhooks", "update", endpoint["id"]).exit_code == 2


def test_an_unknown_event_type_is_refused_naming_the_field(hooks):
    result = hooks("webhooks", "create", "--url", RECEIVER, "--event", "everything")
    assert (result.exit_code, "event_types" in result.stderr) == (1, True)


def test_delete_removes_the_endpoint(hooks, endpoint):
    assert hooks("webhooks", "delete", endpoint["id"]).exit_code == 0
    assert hooks("webhooks", "get", endpoint["id"]).exit_code == 1


def test_deliveries_show_their_state_and_last_answer(hooks, endpoint):
    failed(endpoint["id"])
    table = hooks("webhooks", "deliveries", endpoint["id"]).stdout
    assert "failed" in table and "500" in table and "receiver down" in table
    [listed] = as_json(hooks("webhooks", "deliveries", endpoint["id"], "-o", "json"))
    assert (listed["state"], listed["last_status_code"]) == ("failed", 500)


def test_deliveries_filter_by_state(hooks, endpoint):
    failed(endpoint["id"])
    pending = hooks("webhooks", "deliveries", endpoint["id"], "--state", "pending", "-o", "json")
    assert as_json(pending) == []


def test_a_delivery_shows_the_body_it_sends(hooks, endpoint):
    delivery = failed(endpoint["id"])
    shown = as_json(hooks("webhooks", "delivery", endpoint["id"], delivery, "-o", "json"))
    assert (shown["id"], shown["body"]) == (delivery, "{}")


def test_redeliver_sends_a_failed_delivery_again(hooks, endpoint):
    delivery = failed(endpoint["id"])
    redelivered = as_json(hooks("webhooks", "redeliver", endpoint["id"], delivery, "-o", "json"))
    assert (redelivered["id"], redelivered["state"]) == (delivery, "redelivering")


def test_a_viewer_may_not_list_the_endpoints_and_exits_3(hooks, live_server, endpoint):
    env = {"GPUCTL_URL": live_server.url, "GPUCTL_TOKEN": token_of("viewer")}
    result = hooks("webhooks", "ls", env=env)
    assert (result.exit_code, "(403 permission_denied)" in result.stderr) == (3, True)


def test_another_organizations_owner_sees_nothing_of_acmes_and_exits_1(
    hooks, live_server, endpoint
):
    env = {"GPUCTL_URL": live_server.url, "GPUCTL_TOKEN": token_of("owner", organization="globex")}
    assert as_json(hooks("webhooks", "ls", "--org", "globex", "-o", "json", env=env)) == []
    result = hooks("webhooks", "get", endpoint["id"], "--org", "globex", env=env)
    assert (result.exit_code, "(404 not_found)" in result.stderr) == (1, True)
    assert hooks("webhooks", "ls", "--org", "acme", env=env).exit_code == 1
