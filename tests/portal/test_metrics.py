"""/metrics: Prometheus's text format behind a bearer token, scraped against the demo's state
(`seed_demo`: the simulated cluster, acme's quotas, its three workloads) after a scheduling
cycle, as Prometheus would."""

import io
import json
import re
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from django.db.models import Sum
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from billing import services as billing
from billing.models import BillingRecord
from portal import clock
from scheduling import services
from scheduling.backends import get_backend
from scheduling.models import (
    Cluster,
    GpuClass,
    NodePool,
    ProvisioningRecord,
    Reservation,
    Workload,
)
from tenants.models import Organization, Project
from tenants.tasks import invitation_email_send

from ..factories import ProjectFactory

pytestmark = pytest.mark.django_db

TOKEN = "metrics-test-token"


@pytest.fixture
def token(settings):
    settings.PORTAL_METRICS_TOKEN = TOKEN
    return TOKEN


@pytest.fixture
def demo():
    call_command("seed_demo", stdout=io.StringIO())


@pytest.fixture
def scheduled(demo, django_capture_on_commit_callbacks):
    """The demo after one cycle, its admissions launched on the simulated cluster."""
    backend = get_backend()
    for project in Project.objects.filter(organization__slug="acme"):  # as the worker does
        services.project_provision(project_id=project.pk, backend=backend)
    with django_capture_on_commit_callbacks(execute=True):
        result = services.scheduling_cycle_run()
    for workload_id in result.admitted:
        services.workload_launch(workload_id=workload_id, backend=backend)
    return result


def scrape(client, token=TOKEN) -> dict:
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200, response.content
    return {f.name: f for f in text_string_to_metric_families(response.content.decode())}


def samples(family, name=None) -> dict:
    """{frozen labels: value} of the family's samples called `name` (its own by default)."""
    return {
        frozenset(s.labels.items()): s.value
        for s in family.samples
        if s.name == (name or family.name)
    }


def value(family, name=None, **labels) -> float:
    return samples(family, name)[frozenset(labels.items())]


def test_a_scrape_without_a_token_is_refused(client, token):
    response = client.get("/metrics")
    assert (response.status_code, response["WWW-Authenticate"]) == (401, 'Bearer realm="metrics"')


def test_a_scrape_with_another_token_is_refused(client, token):
    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer not-the-token")
    assert response.status_code == 401


def test_metrics_do_not_exist_while_no_token_is_configured(client, settings):
    settings.PORTAL_METRICS_TOKEN = ""
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 404


def test_the_demos_workloads_are_pending_by_organization_class_and_reason(client, token, demo):
    family = scrape(client)["portal_workloads_pending"]
    assert (family.type, samples(family)) == (
        "gauge",
        {
            frozenset({"organization": "acme", "gpu_class": gpu_class, "reason": "new"}.items()): 1
            # "any": the CPU-only notebook names no class.
            for gpu_class in ("H100-80GB", "L4", "A100-80GB", "any")
        },
    )


def test_the_oldest_wait_per_class_counts_from_submission(client, token, demo):
    Workload.objects.filter(name="llama-finetune").update(
        submitted_at=clock.now() - timedelta(hours=2)
    )
    family = scrape(client)["portal_workloads_pending_oldest_wait_seconds"]
    assert value(family, gpu_class="H100-80GB") >= 7200


def test_admitted_work_shows_as_allocated_and_no_longer_free(client, token, scheduled):
    metrics = scrape(client)
    dgx = {"cluster": "eu-west", "pool": "dgx-h100", "gpu_class": "H100-80GB"}
    assert (
        metrics["portal_gpus_total"].type,
        value(metrics["portal_gpus_total"], **dgx),
        value(metrics["portal_gpus_allocated"], **dgx),
        value(metrics["portal_gpus_free"], **dgx),
    ) == ("gauge", 64, 16, 48)  # llama-finetune: 2 replicas of 8 H100


def test_each_pools_gpus_are_labelled_with_its_cluster(client, token, scheduled):
    family = scrape(client)["portal_gpus_total"]
    l4 = {"cluster": "us-east", "pool": "l4-inference", "gpu_class": "L4"}
    assert value(family, **l4) == 16


def test_each_cluster_says_whether_it_answers(client, token, scheduled):
    Cluster.objects.filter(name="us-east").update(state=Cluster.State.UNREACHABLE)
    family = scrape(client)["portal_cluster_up"]
    assert (
        value(family, cluster="eu-west", region="eu-west"),
        value(family, cluster="us-east", region="us-east"),
    ) == (1, 0)


def test_schedulable_slots_are_counted_by_request_size(client, token, scheduled):
    family = scrape(client)["portal_schedulable_slots"]
    dgx = {"cluster": "eu-west", "pool": "dgx-h100", "gpu_class": "H100-80GB"}
    assert {size: value(family, **dgx, request_gpus=size) for size in ("1", "2", "4", "8")} == {
        "1": 48,
        "2": 24,
        "4": 12,
        "8": 6,
    }


def test_a_cycle_counts_its_decisions_duration_and_each_admissions_wait(
    demo, client, token, django_capture_on_commit_callbacks
):
    def sample(name, **labels):
        return REGISTRY.get_sample_value(name, labels) or 0

    before = (
        sample("portal_scheduling_decisions_total", kind="admitted"),
        sample("portal_scheduling_cycle_duration_seconds_count"),
        sample("portal_admission_wait_seconds_count", gpu_class="H100-80GB"),
    )
    with django_capture_on_commit_callbacks(execute=True):
        services.scheduling_cycle_run()
    metrics = scrape(client)
    assert (
        metrics["portal_scheduling_decisions"].type,
        metrics["portal_scheduling_cycle_duration_seconds"].type,
        metrics["portal_admission_wait_seconds"].type,
        sample("portal_scheduling_decisions_total", kind="admitted") - before[0],
        sample("portal_scheduling_cycle_duration_seconds_count") - before[1],
        sample("portal_admission_wait_seconds_count", gpu_class="H100-80GB") - before[2],
    ) == ("counter", "histogram", "histogram", 4, 1, 1)


def test_gpu_hours_per_organization_and_class_come_from_the_rated_records(client, token, scheduled):
    for seconds in (60, 3600):  # the cluster reports them running, then done (900 s)
        clock.advance(seconds=seconds)
        services.workloads_sync(backend=get_backend())
    billing.usage_meter(now=clock.now())
    rated = BillingRecord.objects.filter(
        organization__slug="acme", gpu_class__name="H100-80GB", resource="gpus"
    ).aggregate(seconds=Sum("quantity_seconds"))["seconds"]
    family = scrape(client)["portal_gpu_hours"]
    assert (
        family.type,
        value(family, "portal_gpu_hours_total", organization="acme", gpu_class="H100-80GB"),
    ) == ("counter", pytest.approx(float(rated) / 3600))
    assert rated > 0


def test_a_reservation_open_now_counts_its_holders_work_up_to_its_size(client, token, scheduled):
    Reservation.objects.create(
        organization=Organization.objects.get(slug="acme"),
        gpu_class=GpuClass.objects.get(name="H100-80GB"),
        pool=NodePool.objects.get(name="dgx-h100"),
        gpus=8,
        starts_at=clock.now() - timedelta(hours=1),
        ends_at=clock.now() + timedelta(hours=1),
        state=Reservation.State.ACTIVE,
    )
    metrics = scrape(client)
    dgx = {"pool": "dgx-h100", "gpu_class": "H100-80GB"}
    assert (
        value(metrics["portal_gpus_reserved"], **dgx),
        value(metrics["portal_gpus_reserved_in_use"], **dgx),
    ) == (8, 8)  # acme's llama-finetune holds 16 H100 in the pool


def test_work_on_borrowed_quota_counts_as_borrowed_gpus(client, token, scheduled):
    Workload.objects.filter(name="llama-finetune").update(borrowed=True)
    family = scrape(client)["portal_gpus_borrowed"]
    assert value(family, pool="dgx-h100", gpu_class="H100-80GB") == 16


def test_the_last_cycle_is_a_timestamp(client, token, scheduled):
    family = scrape(client)["portal_scheduling_last_cycle_timestamp_seconds"]
    assert value(family) == pytest.approx(clock.now().timestamp(), abs=5)


def test_each_project_maps_its_namespace_to_its_tenant(client, token, demo):
    family = scrape(client)["portal_project_info"]
    labels = {"namespace": "acme-ai-dev", "organization": "acme", "project": "ai-dev"}
    assert value(family, **labels) == 1


def test_a_running_notebook_with_idle_gpus_counts_as_idle(client, token, scheduled):
    Workload.objects.filter(name="bob-notebook").update(
        state=Workload.State.RUNNING, idle_since=clock.now()
    )
    metrics = scrape(client)
    assert (
        value(metrics["portal_notebooks_running"], organization="acme"),
        value(metrics["portal_notebooks_idle"], organization="acme"),
    ) == (1, 1)


def test_a_failed_task_is_counted_by_name(client, token):
    name = invitation_email_send.name
    before = REGISTRY.get_sample_value("portal_celery_task_failures_total", {"task": name}) or 0
    invitation_email_send.apply(args=["not-a-uuid"])
    family = scrape(client)["portal_celery_task_failures"]
    assert (family.type, value(family, "portal_celery_task_failures_total", task=name)) == (
        "counter",
        before + 1,
    )


def test_a_retried_task_is_counted_by_name(client, token, monkeypatch):
    from tenants import services as tenants

    attempts = iter([OSError("mail server down"), True])

    def flaky(*, invitation_id):
        outcome = next(attempts)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    monkeypatch.setattr(tenants, "invitation_email_send", flaky)
    name = invitation_email_send.name
    before = REGISTRY.get_sample_value("portal_celery_task_retries_total", {"task": name}) or 0
    invitation_email_send.apply(args=[str(uuid.uuid4())])
    family = scrape(client)["portal_celery_task_retries"]
    assert value(family, "portal_celery_task_retries_total", task=name) == before + 1


def test_provisioning_that_gives_up_is_counted_by_cluster(client, token):
    labels = {"scope": "cluster", "cluster": "", "outcome": "gave_up"}
    before = REGISTRY.get_sample_value("portal_provisioning_failures_total", labels) or 0
    services.cluster_provisioning_give_up(reason="the API server answered 500 ten times")
    family = scrape(client)["portal_provisioning_failures"]
    assert value(family, "portal_provisioning_failures_total", **labels) == before + 1


def test_provisioning_records_are_counted_by_cluster_and_state(client, token):
    project = ProjectFactory()
    for name, state in (("eu-west", "ready"), ("us-east", "failed")):
        cluster = Cluster.objects.create(name=name, region=name, backend="simulated")
        ProvisioningRecord.objects.create(project=project, cluster=cluster, state=state)
    family = scrape(client)["portal_provisioning_records"]
    assert samples(family) == {
        frozenset({"cluster": "eu-west", "scope": "project", "state": "ready"}.items()): 1,
        frozenset({"cluster": "us-east", "scope": "project", "state": "failed"}.items()): 1,
    }


def test_every_collector_read_the_database(client, token, demo):
    family = scrape(client)["portal_metrics_collector_up"]
    assert samples(family) == {
        frozenset({"collector": "billing"}.items()): 1,
        frozenset({"collector": "heartbeats"}.items()): 1,
        frozenset({"collector": "scheduling"}.items()): 1,
    }


# The Grafana dashboard and the alert rules ask only for metrics that exist: the portal's (as a
# scrape shows them) or NVIDIA dcgm-exporter's default counters, as listed in its
# etc/default-counters.csv (github.com/NVIDIA/dcgm-exporter).
DCGM_DEFAULT_COUNTERS = {
    "DCGM_FI_DEV_SM_CLOCK",
    "DCGM_FI_DEV_MEM_CLOCK",
    "DCGM_FI_DEV_MEMORY_TEMP",
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_MEM_COPY_UTIL",
    "DCGM_FI_DEV_ENC_UTIL",
    "DCGM_FI_DEV_DEC_UTIL",
    "DCGM_FI_DEV_XID_ERRORS",
    "DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_DEV_FB_USED",
}
DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
PROMQL_WORDS = {
    "and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right",
    "bool", "offset", "inf", "nan",
}  # fmt: skip
SUFFIXES = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_count", "_sum", "_created"),
}


def promql_metric_names(query: str) -> set[str]:
    """The metric names a PromQL expression (or a Grafana label_values() query) selects."""
    query = re.sub(r"label_values\(\s*([^,)]+).*\)", r"\1", query)
    query = re.sub(r'"(?:[^"\\]|\\.)*"', "", query)  # strings, label values among them
    query = re.sub(r"\{[^}]*\}", "", query)  # label matchers
    query = re.sub(r"\[[^\]]*\]", "", query)  # ranges
    query = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", query)
    query = re.sub(r"\$\w+", "", query)  # Grafana variables
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", query):
        following = query[match.end() :].lstrip()
        word = match.group()
        if following.startswith("(") or word.lower() in PROMQL_WORDS:
            continue  # a function or an operator
        if re.match(r"\d", query[match.start() - 1 : match.start()] or " "):
            continue  # a number's exponent or a duration's unit
        names.add(word)
    return names


def dashboard_queries() -> list[str]:
    dashboard = json.loads((DEPLOY / "grafana" / "portal-dashboard.json").read_text())
    queries = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    queries += [v["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
    return queries


def alert_queries() -> list[str]:
    rules = yaml.safe_load((DEPLOY / "prometheus" / "alerts.yaml").read_text())
    return [rule["expr"] for group in rules["groups"] for rule in group["rules"]]


def exposed_names(metrics: dict) -> set[str]:
    """Every series name a scrape offers: each family's, with its type's suffixes."""
    names = set()
    for family in metrics.values():
        names.add(family.name)
        names.update(family.name + suffix for suffix in SUFFIXES.get(family.type, ()))
    return names


@pytest.mark.parametrize("source", [dashboard_queries, alert_queries])
def test_every_query_names_a_metric_that_exists(client, token, scheduled, source):
    known = exposed_names(scrape(client)) | DCGM_DEFAULT_COUNTERS
    queries = source()
    named = {name for query in queries for name in promql_metric_names(query)}
    assert (bool(queries), bool(named), sorted(named - known)) == (True, True, [])


def test_the_query_parser_sees_through_functions_labels_and_joins():
    query = (
        "avg by (organization) (DCGM_FI_DEV_GPU_UTIL * on (namespace) group_left (organization)"
        ' portal_project_info{organization=~"$organization"}) > 1e3 and on() '
        "rate(portal_x_total[5m])"
    )
    assert promql_metric_names(query) == {
        "DCGM_FI_DEV_GPU_UTIL",
        "portal_project_info",
        "portal_x_total",
    }
