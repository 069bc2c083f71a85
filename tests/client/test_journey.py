"""The issue's "Done when", browser-free: after `make demo`, a new user follows the README's
"From the terminal" with gpuctl alone: logs in, submits a job from a YAML file, watches it run,
follows its logs, sees why another one waits, and downloads this month's invoice; an operator
approves an order and cordons a node with gpuctl admin."""

import json
import threading
import time

import pytest
from pypdf import PdfReader

from .conftest import advance, cycle, ordered

pytestmark = pytest.mark.django_db(transaction=True)

JOB = """\
name: sft-run
kind: fine-tuning
tier: training
image: nvcr.io/nvidia/pytorch:25.01-py3
gpu_classes: [H100-80GB]
gpus: 8
command: [python, finetune.py, --epochs, "3"]
env:
  SIMULATED_RUNTIME_SECONDS: 1800
max_runtime_seconds: 7200
"""


def the_job_runs_to_its_end_in(seconds: float) -> threading.Thread:
    """Time passes: in ``seconds`` the simulated clock moves past the job's end, and moments
    later beat's sync ends the workload."""

    def later():
        from django.db import connection

        from portal import clock

        time.sleep(seconds)
        clock.advance(seconds=1800)
        time.sleep(2)
        advance(0)
        connection.close()

    mover = threading.Thread(target=later)
    mover.start()
    return mover


def test_a_new_user_runs_a_job_follows_its_logs_sees_why_another_waits_and_gets_the_invoice(
    ok, live_server, secret, tmp_path
):
    from billing import services as billing
    from portal import clock

    ok("login", live_server.url, "--token", secret, "--project", "ai-dev")
    (tmp_path / "job.yaml").write_text(JOB)
    assert "sft-run" in ok("submit", "-f", str(tmp_path / "job.yaml"))

    # The worker's beat runs a cycle and follows the cluster; gpuctl watches it run.
    cycle()
    advance(30)
    ok("wait", "sft-run", "--interval", "0.05")
    assert [w["state"] for w in json.loads(ok("ls", "--name", "sft-run", "-o", "json"))] == [
        "Running"
    ]

    # Another one asks for more than acme's H100 quota has left: gpuctl says why it waits.
    ok("submit", "-f", str(tmp_path / "job.yaml"), "--set", "name=too-big", "--set", "replicas=5")
    cycle()
    why = ok("why", "too-big")
    assert "too-big is pending: H100-80GB:" in why and "queue position:" in why

    # gpuctl follows the logs while the job runs, and ends with it.
    mover = the_job_runs_to_its_end_in(1.5)
    followed = ok("logs", "sft-run", "-f")
    mover.join()
    assert " loss " in followed and "training finished in" in followed.splitlines()[-1]
    ok("wait", "sft-run", "--for", "done", "--interval", "0.05")

    # Beat meters the use and drafts this month's invoice; gpuctl downloads it.
    now = clock.now()
    billing.usage_meter(now=now)
    billing.invoices_draft_month(year=now.year, month=now.month)
    pdf = tmp_path / "invoice.pdf"
    ok("invoices", "download", "-O", str(pdf))  # the newest: this month's
    invoice = json.loads(ok("invoices", "download", "--format", "json", "-O", "-"))
    assert pdf.read_bytes().startswith(b"%PDF")
    assert "ai-dev" in PdfReader(pdf).pages[0].extract_text()
    assert any(
        line["project"] == "ai-dev" and line["gpu_class"] == "H100-80GB"
        for line in invoice["lines"]
    )


def test_an_operator_approves_an_order_and_cordons_a_node_with_gpuctl_admin(
    gpuctl, ok, live_server, secret, demo
):
    from django.contrib.auth import get_user_model

    from tenants.permissions import Caller
    from tenants.services import operator_token_issue

    ok("login", live_server.url, "--token", secret)
    created = ordered(gpuctl, "-o", "json", item="h100-80gb-reserved")
    order = json.loads(created.stdout)

    # The operator logs in with an operator token (`manage.py operator_token`, or admin).
    ops = get_user_model().objects.get(email="ops@example.com")
    operator = operator_token_issue(caller=Caller(user=ops), name="ops-laptop")[1]
    ok("login", live_server.url, "--token", operator, "--context", "ops")
    assert order["id"] in ok("admin", "orders", "ls", "--state", "submitted")
    ok("admin", "orders", "approve", order["id"])
    ok("admin", "nodes", "cordon", "dgx-h100-01")

    nodes = json.loads(ok("admin", "nodes", "ls", "-o", "json"))
    decided = json.loads(ok("orders", "get", order["id"], "-o", "json", "--context", "acme"))
    assert decided["state"] == "approved"
    assert [n["name"] for n in nodes if n["cordoned"]] == ["dgx-h100-01"]
