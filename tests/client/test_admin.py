"""gpuctl admin against a live server's operator API, with an operator token (a staff user's,
of no organization): pools and nodes, decisions on orders, reservations and quota requests, the
queue and the insights, quota grants, invoices and credits."""

import json

import pytest

from .conftest import as_json, cycle, job_file, ordered, tomorrow_at

pytestmark = pytest.mark.django_db(transaction=True)


def submitted_order(gpuctl) -> str:
    """An order of alice's for tomorrow, submitted: it waits for an operator."""
    result = ordered(gpuctl, "-o", "json", "--context", "acme", item="h100-80gb-reserved")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["id"]


def submitted(gpuctl, tmp_path, name: str, **fields) -> None:
    """alice's job ``name`` submitted to ai-dev, and a scheduling cycle run."""
    (tmp_path / "job.yaml").write_text(job_file(name, **fields))
    as_json(gpuctl("submit", "-f", str(tmp_path / "job.yaml"), "-o", "json", "--context", "acme"))
    cycle()


def node_running(gpuctl, tmp_path, name: str) -> str:
    """The node alice's job ``name``, submitted and admitted, runs on."""
    submitted(gpuctl, tmp_path, name)
    running = as_json(gpuctl("get", name, "-o", "json", "--context", "acme"))
    [node] = {placement["node"] for placement in running["placements"]}
    return node


def requested_reservation(gpuctl) -> str:
    """A reservation of alice's for tomorrow: it waits for an operator."""
    window = ["--start", tomorrow_at(9), "--end", tomorrow_at(11)]
    args = ["reservations", "create", "--gpu-class", "L4", "--gpus", "1", *window]
    [held] = as_json(gpuctl(*args, "-o", "json", "--context", "acme"))
    return held["id"]


def requested_quota(gpuctl) -> str:
    """A quota request of alice's for 4 more L4: it waits for an operator."""
    args = ["quota-requests", "create", "--gpu-class", "L4", "--amount", "4", "--reason", "Demo"]
    return as_json(gpuctl(*args, "-o", "json", "--context", "acme"))["id"]


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


def test_draining_a_node_cordons_it_and_requeues_what_ran_there(
    gpuctl, logged_in, as_operator, tmp_path
):
    node = node_running(gpuctl, tmp_path, "sft-run")
    drained = as_json(as_operator("admin", "nodes", "drain", node, "-o", "json"))
    assert (drained["node"]["cordoned"], [w["name"] for w in drained["requeued"]]) == (
        True,
        ["sft-run"],
    )


def test_admin_pools_ls_lists_each_pools_gpus(as_operator):
    pools = as_json(as_operator("admin", "pools", "ls", "--gpu-class", "H100-80GB", "-o", "json"))
    assert [pool["name"] for pool in pools] == ["dgx-h100"]


def test_an_operator_lists_the_reservations_waiting_for_a_decision(gpuctl, logged_in, as_operator):
    reservation = requested_reservation(gpuctl)
    args = ["admin", "reservations", "ls", "--state", "requested", "--organization", "acme"]
    waiting = as_json(as_operator(*args, "-o", "json"))
    assert reservation in [r["id"] for r in waiting]


def test_an_operator_approves_a_requested_reservation(gpuctl, logged_in, as_operator):
    reservation = requested_reservation(gpuctl)
    approved = as_json(as_operator("admin", "reservations", "approve", reservation, "-o", "json"))
    assert approved["state"] == "approved"


@pytest.mark.parametrize(
    ("kind", "requested", "state"),
    [
        ("reservations", requested_reservation, "rejected"),
        ("quota-requests", requested_quota, "denied"),
    ],
)
def test_an_operator_rejects_a_request_with_a_reason(
    gpuctl, logged_in, as_operator, kind, requested, state
):
    args = ["admin", kind, "reject", requested(gpuctl), "--reason", "Not this quarter"]
    rejected = as_json(as_operator(*args, "-o", "json"))
    assert (rejected["state"], rejected["decision_reason"]) == (state, "Not this quarter")


def test_a_decision_on_a_decided_reservation_exits_1_with_the_conflict(
    gpuctl, logged_in, as_operator
):
    reservation = requested_reservation(gpuctl)
    as_json(as_operator("admin", "reservations", "approve", reservation, "-o", "json"))
    again = as_operator("admin", "reservations", "approve", reservation)
    assert (again.exit_code, "not_requested" in again.stderr) == (1, True)


def test_an_operator_lists_the_quota_requests_waiting_for_a_decision(
    gpuctl, logged_in, as_operator
):
    asked = requested_quota(gpuctl)
    waiting = as_json(
        as_operator("admin", "quota-requests", "ls", "--state", "requested", "-o", "json")
    )
    assert asked in [q["id"] for q in waiting]


def test_an_operator_grants_a_quota_request_what_was_asked(gpuctl, logged_in, as_operator):
    asked = requested_quota(gpuctl)
    granted = as_json(as_operator("admin", "quota-requests", "approve", asked, "-o", "json"))
    assert (granted["state"], granted["granted_amount"]) == ("approved", 4)


def test_an_operator_grants_a_quota_request_less_until_a_date(gpuctl, logged_in, as_operator):
    asked = requested_quota(gpuctl)
    until = tomorrow_at(12)
    args = ["admin", "quota-requests", "approve", asked, "--amount", "2", "--until", until]
    granted = as_json(as_operator(*args, "-o", "json"))
    assert (granted["granted_amount"], granted["granted_until"][:13]) == (2, until[:13])


def test_the_queue_across_tenants_says_why_each_workload_waits(
    gpuctl, logged_in, as_operator, tmp_path
):
    submitted(gpuctl, tmp_path, "sft-run")
    submitted(gpuctl, tmp_path, "too-big", replicas=6)  # 48 GPUs: over what the quota leaves
    [entry] = as_json(as_operator("admin", "queue", "--organization", "acme", "-o", "json"))
    assert (entry["name"], bool(entry["pending_code"]), bool(entry["pending_message"])) == (
        "too-big",
        True,
        True,
    )


def test_the_queue_table_shows_the_reason_in_words(gpuctl, logged_in, as_operator, tmp_path):
    submitted(gpuctl, tmp_path, "sft-run")
    submitted(gpuctl, tmp_path, "too-big", replicas=6)  # 48 GPUs: over what the quota leaves
    [entry] = as_json(as_operator("admin", "queue", "-o", "json"))
    assert entry["pending_message"] in as_operator("admin", "queue").stdout


def test_admin_insights_lists_the_findings_as_json(as_operator):
    assert isinstance(as_json(as_operator("admin", "insights", "-o", "json")), list)


def test_an_operator_sets_then_removes_a_quota_grant(as_operator):
    key = ["--organization", "acme", "--gpu-class", "L4", "--project", "ai-prod"]
    args = ["admin", "quota-grants", "set", *key, "--guarantee", "1", "--limit", "2"]
    grant = as_json(as_operator(*args, "--reason", "Pilot", "-o", "json"))
    removed = as_operator("admin", "quota-grants", "remove", *key, "--reason", "Pilot over")
    listed = as_json(
        as_operator("admin", "quota-grants", "ls", "--project", "ai-prod", "-o", "json")
    )
    assert ((grant["guarantee"], grant["limit"]), removed.exit_code) == ((1, 2), 0)
    assert "L4" not in [g["gpu_class"] for g in listed]


def test_an_operator_caps_a_grant_in_a_region_and_lifts_the_cap(as_operator):
    key = ["--organization", "acme", "--gpu-class", "L4", "--guarantee", "4", "--limit", "8"]
    args = ["admin", "quota-grants", "set", *key, "--reason", "Regions", "-o", "json"]
    capped = as_json(as_operator(*args, "--region-limit", "us-east=2"))
    lifted = as_json(as_operator(*args, "--region-limit", "none"))
    assert (capped["region_limits"], lifted["region_limits"]) == ({"us-east": 2}, {})


def test_a_region_limit_that_is_not_region_equals_amount_is_bad_usage(as_operator):
    key = ["--organization", "acme", "--gpu-class", "L4", "--guarantee", "4", "--limit", "8"]
    result = as_operator(
        "admin", "quota-grants", "set", *key, "--reason", "R", "--region-limit", "x"
    )
    assert result.exit_code == 2


def test_admin_quota_grants_ls_lists_an_organizations_grants(as_operator):
    grants = as_json(
        as_operator("admin", "quota-grants", "ls", "--organization", "acme", "-o", "json")
    )
    assert {"H100-80GB", "L4"} <= {g["gpu_class"] for g in grants}


def test_admin_invoices_ls_lists_the_drafted_invoice(as_operator):
    drafts = as_json(as_operator("admin", "invoices", "ls", "--state", "draft", "-o", "json"))
    assert "acme" in {invoice["organization"] for invoice in drafts}


def test_issuing_a_draft_of_a_running_period_exits_1_with_the_conflict(as_operator):
    [draft, *_] = as_json(as_operator("admin", "invoices", "ls", "--state", "draft", "-o", "json"))
    result = as_operator("admin", "invoices", "issue", draft["id"])
    assert (result.exit_code, "period_not_ended" in result.stderr) == (1, True)


def test_voiding_a_draft_exits_1_with_the_conflict(as_operator):
    [draft, *_] = as_json(as_operator("admin", "invoices", "ls", "--state", "draft", "-o", "json"))
    result = as_operator("admin", "invoices", "void", draft["id"], "--reason", "Wrong")
    assert (result.exit_code, "invoice_state" in result.stderr) == (1, True)


def test_an_operator_grants_credit_and_lists_it(as_operator):
    args = ["admin", "credits", "grant", "--organization", "acme", "--amount", "50.00"]
    granted = as_json(as_operator(*args, "--reason", "Service credit", "-o", "json"))
    listed = as_json(as_operator("admin", "credits", "ls", "--organization", "acme", "-o", "json"))
    assert (granted["amount"], granted["id"] in [c["id"] for c in listed]) == ("50.00", True)


def test_the_drain_table_names_the_requeued_workloads(gpuctl, logged_in, as_operator, tmp_path):
    node = node_running(gpuctl, tmp_path, "sft-run")
    assert "acme/ai-dev/sft-run" in as_operator("admin", "nodes", "drain", node).stdout
