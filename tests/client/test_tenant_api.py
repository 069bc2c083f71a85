"""gpuctl's commands for the rest of the tenant API against a live server: invoices and their
files, usage, credits, orders, reservations, quotas and quota requests, budgets, tokens."""

import csv
import io

import pytest
from pypdf import PdfReader

from .conftest import as_json, ordered, tomorrow_at

pytestmark = pytest.mark.django_db(transaction=True)


def test_invoice_download_writes_this_months_invoice_as_a_pdf(gpuctl, logged_in, tmp_path):
    from portal import clock

    target = tmp_path / "invoice.pdf"
    month = clock.now().strftime("%Y-%m")
    result = gpuctl("invoices", "download", month, "-O", str(target))
    assert result.exit_code == 0, result.output
    assert target.read_bytes().startswith(b"%PDF")
    assert "Acme AI" in PdfReader(target).pages[0].extract_text()


def test_invoice_download_names_the_file_as_the_portal_does(
    gpuctl, logged_in, monkeypatch, tmp_path
):
    monkeypatch.chdir(tmp_path)
    result = gpuctl("invoices", "download", "--format", "csv")
    assert result.exit_code == 0, result.output
    [written] = tmp_path.glob("invoice-*.csv")
    assert "description" in next(csv.reader(io.StringIO(written.read_text())))


def test_invoice_download_to_stdout_gives_the_json_export(gpuctl, logged_in):
    exported = as_json(gpuctl("invoices", "download", "latest", "--format", "json", "-O", "-"))
    listed = as_json(gpuctl("invoices", "ls", "-o", "json"))
    assert (exported["id"], exported["state"]) == (listed[0]["id"], "draft")


def test_an_unknown_invoice_exits_1(gpuctl, logged_in):
    assert gpuctl("invoices", "get", "1999-01").exit_code == 1


def test_a_member_may_not_see_invoices_and_exits_3(gpuctl, live_server, demo):
    from django.contrib.auth import get_user_model

    from tenants.models import Organization
    from tenants.permissions import Caller
    from tenants.services import token_issue

    _, bobs = token_issue(
        caller=Caller(user=get_user_model().objects.get(email="bob@acme.example")),
        organization=Organization.objects.get(slug="acme"),
        name="bob",
    )
    result = gpuctl("invoices", "ls", env={"GPUCTL_URL": live_server.url, "GPUCTL_TOKEN": bobs})
    assert (result.exit_code, "(403 permission_denied)" in result.stderr) == (3, True)


def test_usage_shows_the_months_cost_and_totals(gpuctl, logged_in):
    usage = as_json(gpuctl("usage", "-o", "json"))
    table = gpuctl("usage").stdout
    assert f"cost {usage['cost']} {usage['currency']}" in table


def test_credits_show_the_balance(gpuctl, logged_in):
    credits = as_json(gpuctl("credits", "-o", "json"))
    assert f"Balance: {credits['balance']}" in gpuctl("credits").stdout


def test_an_order_is_created_submitted_and_listed_waiting(gpuctl, logged_in):
    created = as_json(ordered(gpuctl, "-o", "json", item="h100-80gb-reserved", hours=(9, 13)))
    waiting = as_json(gpuctl("orders", "ls", "--state", "submitted", "-o", "json"))
    assert (created["state"], created["id"] in [o["id"] for o in waiting]) == ("submitted", True)


def test_a_draft_order_is_submitted_then_cancelled(gpuctl, logged_in):
    draft = as_json(ordered(gpuctl, "--draft", "-o", "json"))
    submitted = as_json(gpuctl("orders", "submit", draft["id"], "-o", "json"))
    cancelled = as_json(gpuctl("orders", "cancel", draft["id"], "-o", "json"))
    states = (draft["state"], submitted["state"], cancelled["state"])
    assert states == ("draft", "submitted", "cancelled")


def test_an_order_with_an_end_before_its_start_names_the_field_and_exits_1(gpuctl, logged_in):
    result = ordered(gpuctl, hours=(10, 9))
    assert (result.exit_code, "ends_at" in result.stderr) == (1, True)


def test_a_reservation_is_requested_listed_and_cancelled(gpuctl, logged_in):
    [held] = as_json(
        gpuctl(
            "reservations",
            "create",
            "--gpu-class",
            "L4",
            "--gpus",
            "1",
            "--start",
            tomorrow_at(9),
            "--end",
            tomorrow_at(11),
            "-o",
            "json",
        )
    )
    listed = as_json(gpuctl("reservations", "ls", "-o", "json"))
    cancelled = as_json(gpuctl("reservations", "cancel", held["id"], "-o", "json"))
    assert (held["id"] in [r["id"] for r in listed], cancelled["state"]) == (True, "cancelled")


def test_the_reservation_timeline_shows_each_pools_free_gpus(gpuctl, logged_in):
    assert "dgx-h100" in gpuctl("reservations", "timeline", "--days", "3").stdout


def test_quotas_list_the_organizations_grants(gpuctl, logged_in):
    quotas = as_json(gpuctl("quotas", "-o", "json"))
    assert {"H100-80GB", "L4"} <= {q["gpu_class"] for q in quotas}


def test_a_quota_request_is_made_and_shown(gpuctl, logged_in):
    asked = as_json(
        gpuctl(
            "quota-requests",
            "create",
            "--gpu-class",
            "L4",
            "--amount",
            "4",
            "--reason",
            "Inference launch",
            "-o",
            "json",
        )
    )
    shown = as_json(gpuctl("quota-requests", "get", asked["id"], "-o", "json"))
    assert (shown["amount"], shown["state"]) == (4, "requested")


def test_a_budget_is_set_listed_and_removed(gpuctl, logged_in):
    budget = as_json(
        gpuctl(
            "budgets",
            "set",
            "--amount",
            "1500.00",
            "--threshold",
            "50",
            "--threshold",
            "90",
            "--hard-stop",
            "-o",
            "json",
        )
    )
    assert (budget["monthly_amount"], budget["thresholds"], budget["hard_stop"]) == (
        "1500.00",
        [50, 90],
        True,
    )
    assert gpuctl("budgets", "rm", budget["id"]).exit_code == 0
    assert as_json(gpuctl("budgets", "ls", "-o", "json")) == []


def test_a_token_is_issued_with_its_secret_once_then_revoked(gpuctl, logged_in):
    issued = as_json(gpuctl("tokens", "issue", "ci", "--scope", "read", "-o", "json"))
    revoked = as_json(gpuctl("tokens", "revoke", issued["id"], "-o", "json"))
    listed = as_json(gpuctl("tokens", "ls", "-o", "json"))
    assert (bool(issued["secret"]), revoked["state"]) == (True, "revoked")
    assert "secret" not in listed[0]


@pytest.mark.parametrize("command", ["projects", "gpu-classes", "tiers", "catalog"])
def test_the_catalog_lists_answer_as_tables_and_as_json(gpuctl, logged_in, command):
    assert as_json(gpuctl(command, "-o", "json"))
    assert gpuctl(command).exit_code == 0


def test_capacity_shows_each_pools_free_gpus_and_where_a_block_fits(gpuctl, logged_in):
    shown = gpuctl("capacity", "--pool", "dgx-h100", "--gpus", "8", "--length", "2").stdout
    assert ("dgx-h100" in shown, "8 H100-80GB on one node in dgx-h100: from" in shown) == (
        True,
        True,
    )


def test_capacity_as_json_is_the_apis_calendar(gpuctl, logged_in):
    calendar = as_json(gpuctl("capacity", "--hours", "24", "-o", "json"))
    assert {len(pool["free"]) for pool in calendar["pools"]} == {24}
