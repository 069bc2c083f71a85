"""A pending workload's detail shows what would unblock it: alternatives the engine has tried,
each with its start, and for a quota-limited one the quota request form filled in."""

from datetime import timedelta
from decimal import Decimal
from urllib.parse import parse_qs, urlsplit

import pytest

from billing import services as billing_services
from billing.models import CatalogItem
from portal import clock
from scheduling.models import GpuClass
from tenants.permissions import Caller

from ...factories import UserFactory
from ...roles import READING

pytestmark = pytest.mark.django_db

URL = "/api/v1/organizations/acme/projects/ai-dev/workloads/"


@pytest.mark.parametrize(("caller", "status"), READING)
def test_every_member_reads_a_pending_workloads_alternatives_and_nobody_else(
    waiting_for_h100, api_as, caller, status
):
    client = api_as(None if caller == "anonymous" else waiting_for_h100[caller])
    response = client.get(f"{URL}waits/")
    assert response.status_code == status
    if status == 200:
        assert response.json()["pending"]["alternatives"]


def test_a_job_waiting_for_a_full_class_is_offered_another_class_it_may_use(
    waiting_for_h100, api_as
):
    pending = api_as(waiting_for_h100["viewer"]).get(f"{URL}waits/").json()["pending"]

    offered = {
        (a["kind"], a["change"], a["gpu_class"], a["admitted"]) for a in pending["alternatives"]
    }
    assert ("gpu_class", "A100-80GB instead of H100-80GB", "A100-80GB", True) in offered


def test_an_alternative_carries_the_submission_fields_as_they_would_be_submitted(
    waiting_for_h100, api_as
):
    pending = api_as(waiting_for_h100["member"]).get(f"{URL}waits/").json()["pending"]

    other = next(a for a in pending["alternatives"] if a["kind"] == "gpu_class")
    assert (other["gpu_classes"], other["gpus"], other["replicas"]) == (["A100-80GB"], 4, 1)


def test_a_job_over_its_quota_is_offered_a_quota_request_for_the_missing_gpus(over_quota, api_as):
    pending = api_as(over_quota["member"]).get(f"{URL}second/").json()["pending"]

    ask = next(a for a in pending["alternatives"] if a["kind"] == "quota_request")
    prefill = ask["quota_request"]
    assert (prefill["gpu_class"], prefill["resource"], prefill["amount"]) == (
        "H100-80GB",
        "gpus",
        8,
    )


def test_the_quota_request_alternative_links_to_the_form_filled_in(over_quota, api_as):
    pending = api_as(over_quota["member"]).get(f"{URL}second/").json()["pending"]

    link = next(a for a in pending["alternatives"] if a["kind"] == "quota_request")
    url = urlsplit(link["quota_request"]["form_url"])
    query = parse_qs(url.query)
    assert (url.path, query["amount"], query["gpu_class"]) == (
        "/orgs/acme/quotas/",
        ["8"],
        ["H100-80GB"],
    )


def test_a_running_workload_has_no_pending_reason_nor_alternatives(over_quota, api_as):
    body = api_as(over_quota["member"]).get(f"{URL}first/").json()

    assert (body["state"], body["pending"]) == ("Admitted", None)


def test_an_alternative_costs_its_gpus_at_the_catalogs_price_over_its_max_runtime(
    ready, full_h100, submit, cycle, api_as
):
    operator = Caller(user=UserFactory(email="ops@example.com", is_staff=True))
    item = billing_services.catalog_item_save(
        caller=operator,
        item=CatalogItem(
            slug="a100-on-demand",
            name="A100 on demand",
            kind="on_demand",
            gpu_class=GpuClass.objects.get(name="A100-80GB"),
            active_from=clock.now() - timedelta(days=1),
        ),
    )
    billing_services.price_version_add(caller=operator, item=item, unit_price=Decimal("2.0000"))
    submit(name="waits", gpus=4, max_runtime=timedelta(hours=2))
    cycle()

    pending = api_as(ready["member"]).get(f"{URL}waits/").json()["pending"]

    other = next(a for a in pending["alternatives"] if a["kind"] == "gpu_class")
    assert (other["gpu_hours"], other["cost"], other["cost_per_hour"]) == (8.0, "16.00", "8.00")
