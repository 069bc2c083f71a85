"""Schemathesis against a live server: every operation of the schema, with every check.

The demo is seeded (acme, its projects, quotas and workloads, the simulated cluster) and
schemathesis calls the API as acme's owner with a write token (and, in a run of its own, the
operator API as an operator, with an operator token), in its phases: coverage (each
boundary of each parameter and each way a request can be wrong, unexpected methods included),
fuzzing, then stateful sequences that feed one response's identifiers to the next request.
Deterministic (no random seed, no example database) and bounded: about a minute.

The tenant API's run and the operator API's are two files, so that `--dist loadfile` can give
them to two workers: they are the suite's two longest tests.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.servers.basehttp import WSGIRequestHandler
from django.db import connections
from django.test import Client

from scheduling.models import GpuClass, PriorityTier
from tenants import services
from tenants.models import Organization, Role
from tenants.permissions import Caller

from ...factories import UserFactory

SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
MAX_EXAMPLES = 10
# Bodies valid by the schema that these operations refuse with a field error (400), by rules
# no schema can state: a slug or name taken, an open invitation for that address already, an
# invitation link that names none, an expiry in the past, a tier or GPU class the catalog does
# not have, more than the quota or the largest node, a name twice in a batch, a reservation
# window in the past or ending before it starts, a quota request's end in the past, an order
# of an item not offered or for a period in the past, a budget for a project the organization
# does not have; a time past the booking horizon or outside the years 2000 to 2100, and a
# usage period outside them (portal.bounds: no format states a range of dates) or that starts
# after it ends; a capacity calendar from the past or beyond its 14 days, of a pool or class
# the cluster does not have, or a block's window longer than the calendar; a replica the
# workload does not have; a single sign-on provider the portal is not
# configured with; a webhook URL whose host does not resolve or resolves to a refused address;
# a submission's rules in its what-if too; a checkpoint reported in the future or before the
# workload started (or outside the years 2000 to 2100).
# The operator API's too: an organization, project or GPU class named that does not exist, a
# limit below the guarantee, a reason of spaces only, a tier value another tier has, a credit
# note over what the invoice leaves, an amount granted below one or an end already past, a
# fair-share weight that is not a positive number (a decimal is a string to the schema), a cost
# model of a pool or node that does not exist or from the past. Every other status stays
# checked.
RULES_BEYOND_THE_SCHEMA = [
    "budgets_set",
    "capacity_calendar",
    "invitations_accept",
    "invitations_create",
    "operator_cost_models_add",
    "operator_credits_grant",
    "operator_fair_share_weight_update",
    "operator_gpu_classes_update",
    "operator_invoices_credit_note",
    "operator_invoices_void",
    "operator_orders_reject",
    "operator_priority_tiers_update",
    "operator_quota_grants_remove",
    "operator_quota_grants_set",
    "operator_quota_requests_approve",
    "operator_quota_requests_reject",
    "operator_reservations_reject",
    "orders_create",
    "organizations_sso_update",
    "projects_create",
    "quota_requests_create",
    "reservations_request",
    "tokens_issue",
    "usage_summary",
    "webhooks_create",
    "webhooks_update",
    "workload_logs",
    "workloads_checkpoint",
    "workloads_submit",
    "workloads_submit_batch",
    "workloads_what_if",
    "workloads_what_if_batch",
]
ACCEPTED = ["2xx", "400", "401", "403", "404", "409", "429"]


def toml(value) -> str:
    """A string, number, boolean, list or inline table as TOML (JSON's spelling of the first
    four is TOML's)."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {toml(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)


def configuration(*, paths: dict, bodies: dict, only: dict, operator: dict) -> str:
    """schemathesis.toml: the demo's objects in every path, so that requests reach the views'
    rules instead of a 404 (unit tests cover unknown identifiers); `only`, per operation, the
    objects that it removes, which the others keep using; `bodies`, the catalog's names that
    body fields draw from most of the time; `operator`, the path parameters of the operator
    API's operations (tag "operator")."""
    dictionaries = {path.removesuffix("[*]"): (path, values) for path, values in bodies.items()}
    lines = [
        "workers = 1",
        "[generation]",
        "deterministic = true",
        'database = "none"',
        f"max-examples = {MAX_EXAMPLES}",
    ]
    for name, (_, values) in dictionaries.items():
        lines += [f"[dictionaries.{name}]", f"values = {toml(values)}"]
    lines.append("[parameters]")
    lines += [f'"path.{name}" = {toml(value)}' for name, value in paths.items()]
    lines += [
        f'"body.{path}" = {toml({"dictionary": name, "probability": 0.8})}'
        for name, (path, _) in dictionaries.items()
    ]
    for operation, parameters in only.items():
        lines += [
            "[[operations]]",
            f"include-operation-id = {toml(operation)}",
            f"parameters = {toml({f'path.{k}': v for k, v in parameters.items()})}",
        ]
    lines += [
        "[[operations]]",
        'include-tag = "operator"',
        f"parameters = {toml({f'path.{k}': v for k, v in operator.items()})}",
    ]
    lines += [
        "[[operations]]",
        f"include-operation-id = {toml(RULES_BEYOND_THE_SCHEMA)}",
        f"checks.positive_data_acceptance.expected-statuses = {toml(ACCEPTED)}",
    ]
    return "\n".join(lines) + "\n"


@pytest.fixture
def demo(live_server, settings, monkeypatch, tmp_path) -> tuple[str, Path]:
    """The seeded demo, acme's owner's write token, and the configuration naming its objects."""
    settings.PORTAL_TOKEN_THROTTLE_RATE = "1000000/min"  # the fuzzer is one fast client
    settings.PORTAL_LOGS_FOLLOW_MAX_SECONDS = 0  # a follower is answered what there is at once
    # Answers leave at once: without it each keep-alive request waits 40 ms (Nagle's algorithm
    # against delayed acknowledgements), and the run takes three times as long.
    monkeypatch.setattr(WSGIRequestHandler, "disable_nagle_algorithm", True)
    # The live server's thread of a keep-alive connection keeps its database connection from
    # one request to the next instead of opening one a request (the tests' CONN_MAX_AGE is 0):
    # 100 requests in 4.9 to 6.4 s instead of 7.1 to 8.1 s on the loaded machine.
    monkeypatch.setitem(connections.settings["default"], "CONN_MAX_AGE", 60)
    call_command("seed_demo", stdout=open("/dev/null", "w"))  # noqa: SIM115
    acme = Organization.objects.get(slug="acme")
    owner = Caller(user=acme.memberships.get(role=Role.OWNER).user)
    _, secret = services.token_issue(caller=owner, organization=acme, name="fuzz", scope="write")
    spare, _ = services.token_issue(caller=owner, organization=acme, name="spare", scope="read")
    invitation = services.member_invite(
        caller=owner, organization=acme, email="new@acme.example", role=Role.VIEWER
    )
    leaving = UserFactory(email="carol@acme.example")
    services.invitation_accept(
        user=leaving,
        token=services.invitation_token(
            services.member_invite(
                caller=owner, organization=acme, email=leaving.email, role=Role.VIEWER
            )
        ),
    )
    # The operator API as an operator: a staff user's operator token.
    _, operator_secret = services.operator_token_issue(
        caller=Caller(user=UserFactory(email="fuzz-ops@example.com", is_staff=True)), name="fuzz"
    )
    config = tmp_path / "schemathesis.toml"
    config.write_text(
        configuration(
            paths={
                "org_slug": "acme",
                "project_slug": "ai-dev",
                "name": "resnet-eval",
                "member_id": str(acme.memberships.get(role=Role.MEMBER).pk),
                "invitation_id": str(invitation.pk),
                "token_id": str(spare.pk),
            },
            bodies={
                "tier": list(PriorityTier.objects.values_list("name", flat=True)),
                "gpu_classes[*]": list(GpuClass.objects.values_list("name", flat=True)),
            },
            only={
                "projects_destroy": {"project_slug": "ai-prod"},
                "members_destroy": {"member_id": str(acme.memberships.get(user=leaving).pk)},
            },
            operator={"name": "dgx-h100-01"},
        )
    )
    return secret, operator_secret, config


def schemathesis(url: str, config: Path, cwd: Path, *options: str) -> subprocess.CompletedProcess:
    """Run schemathesis against the live server at ``url`` with the schema it serves, read
    here (in the test's process) and handed over as a file: schemathesis gives a schema's URL
    10 s to answer, which generating it overruns on a loaded machine."""
    schema = cwd / "schema.json"
    schema.write_bytes(Client().get("/api/schema/", {"format": "json"}).content)
    return subprocess.run(
        [
            str(SCHEMATHESIS),
            "--config-file",
            str(config),
            "--no-color",
            "run",
            str(schema),
            "--url",
            url,
            *options,
        ],
        cwd=cwd,  # where schemathesis keeps its cache
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
