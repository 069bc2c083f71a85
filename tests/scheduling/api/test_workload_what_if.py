"""The what-if of a submission (or a batch): what the next cycle would do with it, with the
same checks as submitting, writing nothing."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from scheduling.models import SchedulerState, Workload, WorkloadEvent
from scheduling.services import WHAT_IF_BATCH_MAX
from tenants.models import AuditEvent

from .conftest import SUBMITTING
from .test_workload_batches import batch
from .test_workloads import BODY

pytestmark = pytest.mark.django_db

PROJECT = "/api/v1/organizations/acme/projects/ai-dev"
URL = f"{PROJECT}/workloads/what-if/"
BATCH_URL = f"{PROJECT}/workload-batches/what-if/"
# Whoever may submit may ask: the same callers, answered 200 where submitting gives 201.
ASKING = [(caller, 200 if status == 201 else status) for caller, status in SUBMITTING]


def ask(api_as, ready, body=BODY, url=URL, caller="member"):
    response = api_as(ready[caller]).post(url, body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


@pytest.mark.parametrize(("caller", "status"), ASKING)
def test_asking_is_for_whoever_may_submit(ready, api_as, caller, status):
    client = api_as(None if caller == "anonymous" else ready[caller])
    assert client.post(URL, BODY, format="json").status_code == status


@pytest.mark.parametrize(("caller", "status"), ASKING)
def test_asking_for_a_batch_is_for_whoever_may_submit(ready, api_as, caller, status):
    client = api_as(None if caller == "anonymous" else ready[caller])
    assert client.post(BATCH_URL, batch("a-1", "a-2"), format="json").status_code == status


def test_a_foreign_tenants_project_is_not_found(ready, api_as):
    client = api_as(ready["foreign"])
    assert client.post(URL, BODY, format="json").status_code == 404


def test_asking_writes_no_row_event_cycle_request_or_audit(ready, api_as, cycle, submit):
    submit(name="running", gpus=8)
    cycle()
    counts = (Workload.objects.count(), WorkloadEvent.objects.count(), AuditEvent.objects.count())
    requested = SchedulerState.objects.values_list("cycle_requested_at", flat=True).get()
    ask(api_as, ready)
    ask(api_as, ready, batch("b-1", "b-2"), url=BATCH_URL)
    assert (
        Workload.objects.count(),
        WorkloadEvent.objects.count(),
        AuditEvent.objects.count(),
    ) == counts
    assert SchedulerState.objects.values_list("cycle_requested_at", flat=True).get() == requested


def test_asking_runs_only_reads(ready, api_as, cycle, django_capture_on_commit_callbacks):
    cycle()
    client = api_as(ready["member"])
    with (
        CaptureQueriesContext(connection) as queries,
        django_capture_on_commit_callbacks() as callbacks,
    ):
        assert client.post(URL, BODY, format="json").status_code == 200
    writes = [
        q["sql"]
        for q in queries
        if q["sql"].lstrip().split()[0].upper() in {"INSERT", "UPDATE", "DELETE"}
        and "django_session" not in q["sql"]
    ]
    assert writes == []
    assert callbacks == []  # nothing published, no task queued


def test_on_a_free_cluster_it_would_be_admitted_and_says_where(ready, api_as, cycle):
    cycle()
    (answer,) = ask(api_as, ready)["workloads"]
    assert answer["outcome"] == "admitted"
    assert answer["gpu_class"] == "H100-80GB"
    assert len(answer["nodes"]) == 2 and answer["replicas"] == 2
    assert answer["pools"] and answer["preempts"] == 0


def test_with_its_quota_in_use_it_waits_for_quota_first_in_the_queue(ready, api_as, full_h100):
    (answer,) = ask(api_as, ready)["workloads"]
    assert answer["outcome"] == "waits"
    assert answer["pending"]["code"] == "quota"
    assert "64" in answer["pending"]["message"]
    assert answer["pending"]["queue_position"] == 1


def test_waiting_on_quota_it_offers_a_quota_request_with_the_form_filled_in(over_quota, api_as):
    body = {**BODY, "replicas": 1}
    (answer,) = ask(api_as, over_quota, body)["workloads"]
    offered = next(a for a in answer["alternatives"] if a["kind"] == "quota_request")
    prefill = offered["quota_request"]
    assert (prefill["gpu_class"], prefill["amount"], prefill["form_url"][:18]) == (
        "H100-80GB",
        8,
        "/orgs/acme/quotas/",
    )


def test_an_answer_that_would_start_now_offers_no_alternatives(ready, api_as, cycle):
    cycle()
    (answer,) = ask(api_as, ready)["workloads"]
    assert (answer["outcome"], answer["alternatives"]) == ("admitted", [])


def test_a_higher_tier_would_preempt_and_learns_only_how_many(ready, api_as, full_h100):
    body = {**BODY, "kind": "inference", "tier": "inference-prod", "replicas": 1}
    (answer,) = ask(api_as, ready, body)["workloads"]
    assert answer["outcome"] == "admitted"
    assert answer["preempts"] == 1
    assert not any("fill-" in str(value) for value in answer.values())


def test_it_answers_from_the_last_cycles_state(ready, api_as, cycle):
    cycle()
    basis = ask(api_as, ready)["basis"]
    assert (basis["source"], basis["note"]) == ("last_cycle", "")


def test_before_any_cycle_it_reads_the_cluster_afresh_and_says_so(ready, api_as):
    basis = ask(api_as, ready)["basis"]
    assert basis["source"] == "fresh_snapshot"
    assert basis["note"] == "No scheduling cycle has run yet."


def test_when_running_work_ended_since_the_cycle_it_reads_afresh(ready, api_as, submit, cycle):
    workload = submit(name="short", gpus=8)
    cycle()
    Workload.objects.get(pk=workload.pk).placements.update(ended_at=workload.submitted_at)
    basis = ask(api_as, ready)["basis"]
    assert basis["source"] == "fresh_snapshot"
    assert basis["note"] == "The cluster changed since the last scheduling cycle."


def test_when_the_last_cycle_is_too_old_it_reads_afresh(ready, api_as, cycle, advance, settings):
    cycle()
    advance(settings.PORTAL_WHAT_IF_MAX_AGE_SECONDS + 1)
    assert ask(api_as, ready)["basis"]["source"] == "fresh_snapshot"


def test_a_request_over_the_quota_limit_is_refused_as_an_answer(ready, api_as, cycle):
    cycle()
    (answer,) = ask(api_as, ready, {**BODY, "replicas": 9})["workloads"]
    assert answer["outcome"] == "refused"
    assert list(answer["refusal"]) == ["gpus"]


def test_bad_input_is_a_field_error_as_when_submitting(ready, api_as):
    response = api_as(ready["member"]).post(URL, {**BODY, "gpus": "eight"}, format="json")
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["gpus"]


def test_a_batchs_workloads_are_answered_together(ready, api_as, cycle):
    cycle()
    # Two gangs of 4 x 8 GPUs fill the 64 H100: one of the three would wait behind the others
    # (which one: a batch's workloads share their submit time, their ids order them).
    body = batch("big-1", "big-2", "big-3", gpus=8, replicas=4)
    answers = ask(api_as, ready, body, url=BATCH_URL)["workloads"]
    assert [w["name"] for w in answers] == ["big-1", "big-2", "big-3"]
    assert sorted(w["outcome"] for w in answers) == ["admitted", "admitted", "waits"]


def test_the_what_ifs_address_is_a_name_no_workload_takes(ready, api_as):
    body = {**BODY, "name": "what-if"}
    response = api_as(ready["member"]).post(f"{PROJECT}/workloads/", body, format="json")
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["name"]


def test_a_batch_what_if_holds_at_most_a_hundred_workloads(ready, api_as):
    body = batch(*(f"w-{n}" for n in range(WHAT_IF_BATCH_MAX + 1)))
    response = api_as(ready["member"]).post(BATCH_URL, body, format="json")
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["workloads"]
