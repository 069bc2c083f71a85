"""A webhook delivered through a real Celery worker: a workload submitted over the API is
told of to the organization's endpoint (a local receiver) by the worker, after the request's
commit, signed with the endpoint's secret."""

import hashlib
import hmac
import json

import pytest

from tenants.permissions import Caller
from webhooks import services
from webhooks.models import Delivery

from ..scheduling import conftest as scheduling_fixtures
from .conftest import start_worker, stop_worker, wait_for

pytestmark = pytest.mark.worker

backend, cluster, quotas = (
    scheduling_fixtures.backend,
    scheduling_fixtures.cluster,
    scheduling_fixtures.quotas,
)
WORKLOADS = "/api/v1/organizations/acme/projects/ai-dev/workloads/"


@pytest.fixture
def webhook_worker(transactional_db, tmp_path):
    """A worker that may send to the local receiver (as an operator would allow it)."""
    worker, _ = start_worker(tmp_path, beat=False, PORTAL_WEBHOOKS_ALLOW_PRIVATE="true")
    try:
        yield worker
    finally:
        stop_worker(worker)


def test_a_submitted_workload_is_delivered_signed_by_the_worker(
    transactional_db,
    cluster,
    quotas,
    acme,
    alice,
    mia,
    ai_dev,
    api_as,
    httpserver,
    settings,
    webhook_worker,
):
    settings.PORTAL_WEBHOOKS_ALLOW_PRIVATE = True
    httpserver.expect_request("/hook").respond_with_data("ok")
    endpoint, secret = services.endpoint_create(
        caller=Caller(user=alice),
        organization=acme,
        url=httpserver.url_for("/hook"),
        event_types=["workload.state_changed"],
    )
    body = {
        "name": "train",
        "kind": "training",
        "tier": "training",
        "image": "pytorch:latest",
        "gpu_classes": ["H100-80GB"],
        "gpus": 8,
    }
    assert api_as(mia).post(WORKLOADS, body, format="json").status_code == 201
    wait_for(
        lambda: Delivery.objects.filter(endpoint=endpoint, state="delivered").exists(),
        state=lambda: list(Delivery.objects.values_list("state", "last_error")),
    )
    request, _ = httpserver.log[0]
    raw = request.get_data()
    signed = f"{request.headers['Portal-Webhook-Timestamp']}.".encode() + raw
    expected = "v1=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    sent = json.loads(raw)
    assert request.headers["Portal-Webhook-Signature"] == expected
    assert (sent["type"], sent["data"]["name"], sent["organization"]) == (
        "workload.state_changed",
        "train",
        "acme",
    )
