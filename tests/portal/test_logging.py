"""Log lines say which request and task they belong to: the request id (the caller's
X-Request-ID when well formed, else a new one, echoed in the response), the user and the
organization; a task queued by a request logs with that request's id."""

import json
import logging

import pytest
from django.utils.module_loading import import_string

from portal.logs import ContextFilter, logging_config
from scheduling.models import ProvisioningRecord

from ..worker.conftest import start_worker, wait_for


def test_a_well_formed_request_id_is_echoed(client):
    response = client.get("/healthz", HTTP_X_REQUEST_ID="lb-7f3a.42:1")
    assert response["X-Request-ID"] == "lb-7f3a.42:1"


def test_a_malformed_request_id_is_replaced_by_a_new_one(client):
    response = client.get("/healthz", HTTP_X_REQUEST_ID="<script>alert(1)</script>")
    assert len(response["X-Request-ID"]) == 32 and response["X-Request-ID"].isalnum()


def test_a_request_without_an_id_gets_a_new_one(client):
    first, second = client.get("/healthz"), client.get("/healthz")
    assert first["X-Request-ID"] != second["X-Request-ID"]


@pytest.mark.django_db
def test_a_line_logged_for_a_request_names_its_id_user_and_organization(
    alice, acme, token_for, caplog
):
    _, client = token_for(alice, acme, scope="read")
    caplog.handler.addFilter(ContextFilter())
    with caplog.at_level(logging.WARNING, logger="django.request"):
        client.get("/api/v1/organizations/acme/projects/nope/", HTTP_X_REQUEST_ID="req-404")
    [record] = [r for r in caplog.records if r.name == "django.request"]
    assert (record.request_id, record.user, record.organization, record.task_id) == (
        "req-404",
        str(alice.pk),
        "acme",
        None,
    )


def test_production_lines_are_json_with_the_context():
    spec = dict(logging_config(log_format="json", level="INFO")["formatters"]["json"])
    formatter = import_string(spec.pop("()"))(**spec)
    record = logging.LogRecord("portal", logging.INFO, __file__, 1, "cycle ran", None, None)
    ContextFilter().filter(record)
    line = json.loads(formatter.format(record))
    assert {k: line[k] for k in ("level", "logger", "message", "request_id", "task_id")} == {
        "level": "INFO",
        "logger": "portal",
        "message": "cycle ran",
        "request_id": None,
        "task_id": None,
    }


@pytest.mark.worker
def test_a_task_queued_by_a_request_logs_with_the_requests_id(
    transactional_db, alice, api_as, tmp_path
):
    worker, _ = start_worker(tmp_path, beat=False, PORTAL_LOG_FORMAT="json")
    try:
        created = api_as(alice).post(
            "/api/v1/organizations/acme/projects/",
            {"slug": "vision", "name": "Vision"},
            format="json",
            HTTP_X_REQUEST_ID="req-vision-1",
        )
        assert created.status_code == 201
        wait_for(
            lambda: ProvisioningRecord.objects.filter(
                project__slug="vision", state=ProvisioningRecord.State.READY
            ).exists()
        )
    finally:
        worker.terminate()
        output, _ = worker.communicate(timeout=20)
    lines = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    # The task queued by the request, and the one it queues for each cluster.
    done = [
        (line["request_id"], bool(line["task_id"]))
        for line in lines
        if "project_provision" in line["message"] and "succeeded" in line["message"]
    ]
    assert done and set(done) == {("req-vision-1", True)}
