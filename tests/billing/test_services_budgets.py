"""Budgets: thresholds mailed once per month, and a hard stop that refuses new work with a 409
through the submission check and holds queued work until the budget allows it."""

from datetime import timedelta

import pytest
from django.core import mail
from django.db import connection
from django.test.utils import CaptureQueriesContext

from billing import services
from billing.models import BudgetAlert
from portal import clock
from portal.errors import Conflict
from scheduling import services as scheduling
from scheduling.models import GpuClass, QuotaGrant
from tenants.models import AuditEvent
from tenants.permissions import Caller

from ..factories import ProjectFactory
from ..queued import Worker
from .conftest import budget, spent_today

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("mid_month")]

BUDGETS = "/api/v1/organizations/acme/budgets/"
USAGE = "/api/v1/organizations/acme/usage/"


def submit_more(user, project, name="more"):
    return scheduling.workload_submit(
        caller=Caller(user=user),
        project=project,
        request=scheduling.WorkloadRequest(
            name=name,
            kind="training",
            tier="training",
            image="pytorch:latest",
            gpu_classes=("H100-80GB",),
            gpus=8,
        ),
    )


@pytest.fixture
def h100_quota(acme, cluster):
    QuotaGrant.objects.create(
        organization=acme, gpu_class=GpuClass.objects.get(name="H100-80GB"), guarantee=8, limit=8
    )


def test_each_threshold_crossed_is_recorded_once(on_demand, alice, acme, vision):
    budget(alice, acme, "50")
    spent_today(vision, 2)  # 46.40 of 50: past 50% and 80%
    services.budgets_check()
    services.budgets_check()
    assert sorted(BudgetAlert.objects.values_list("threshold", flat=True)) == [50, 80]


def test_a_crossed_threshold_is_audited(on_demand, alice, acme, vision):
    budget(alice, acme, "50")
    spent_today(vision, 2)
    services.budgets_check()
    assert AuditEvent.objects.filter(action="budget.threshold").count() == 2


def test_a_crossed_threshold_is_mailed_to_owners_and_admins(
    on_demand, alice, adam, mia, acme, vision
):
    budget(alice, acme, "50", thresholds=[80])
    spent_today(vision, 2)
    services.budgets_check()
    services.budget_alert_email_send(alert_id=BudgetAlert.objects.get().pk)
    assert (
        sorted(m.to[0] for m in mail.outbox),
        {"80% of the monthly budget" in m.subject for m in mail.outbox},
    ) == (sorted([alice.email, adam.email]), {True})


def test_a_project_budget_counts_only_its_project(on_demand, alice, acme, vision):
    web = ProjectFactory(organization=acme, slug="web")
    budget(alice, acme, "50", project="web")
    spent_today(vision, 2)
    services.budgets_check()
    assert (BudgetAlert.objects.count(), web.slug) == (0, "web")


def test_a_spent_hard_stop_budget_refuses_new_work(
    on_demand, h100_quota, alice, acme, vision, ai_dev, mia
):
    budget(alice, acme, "20", hard_stop=True)
    spent_today(vision, 1)  # 23.20 of 20
    with pytest.raises(Conflict) as refused:
        submit_more(mia, ai_dev)
    assert refused.value.code == "budget_exhausted"


def test_a_budget_without_a_hard_stop_only_warns(
    on_demand, h100_quota, alice, acme, vision, ai_dev, mia
):
    budget(alice, acme, "20")
    spent_today(vision, 1)
    assert submit_more(mia, ai_dev).state == "Pending"


def test_queued_work_of_a_spent_hard_stop_budget_is_held_with_the_reason(
    on_demand, h100_quota, alice, acme, vision, ai_dev, mia
):
    budget(alice, acme, "100", hard_stop=True)
    queued = submit_more(mia, ai_dev)
    spent_today(vision, 5)  # 116.00 of 100, spent after the work was queued
    scheduling.scheduling_cycle_run()
    queued.refresh_from_db()
    assert (queued.state, queued.pending_code, "budget" in queued.pending_message) == (
        "Pending",
        "budget_exhausted",
        True,
    )


def test_the_held_reason_says_the_budget_is_reached(
    on_demand, h100_quota, alice, acme, vision, ai_dev, mia
):
    budget(alice, acme, "100", hard_stop=True)
    queued = submit_more(mia, ai_dev)
    spent_today(vision, 5)
    scheduling.scheduling_cycle_run()
    queued.refresh_from_db()
    assert queued.pending_message.startswith(
        "budget: the monthly budget of 100.00 EUR of the organization is reached (116.00 spent"
    )


def test_held_work_is_admitted_once_the_budget_is_raised(
    on_demand, h100_quota, alice, acme, vision, ai_dev, mia
):
    budget(alice, acme, "100", hard_stop=True)
    queued = submit_more(mia, ai_dev)
    spent_today(vision, 5)
    scheduling.scheduling_cycle_run()
    budget(alice, acme, "1000", hard_stop=True)
    scheduling.scheduling_cycle_run()
    queued.refresh_from_db()
    assert queued.state == "Admitted"


def test_held_work_is_admitted_once_the_budget_is_removed(
    on_demand, h100_quota, alice, acme, vision, ai_dev, mia
):
    stop = budget(alice, acme, "100", hard_stop=True)
    queued = submit_more(mia, ai_dev)
    spent_today(vision, 5)
    scheduling.scheduling_cycle_run()
    services.budget_delete(caller=Caller(user=alice), budget=stop)
    scheduling.scheduling_cycle_run()
    queued.refresh_from_db()
    assert queued.state == "Admitted"


def test_held_work_is_admitted_when_a_new_month_starts(
    on_demand, h100_quota, alice, acme, vision, ai_dev, mia
):
    budget(alice, acme, "100", hard_stop=True)
    queued = submit_more(mia, ai_dev)
    spent_today(vision, 5)
    scheduling.scheduling_cycle_run()
    clock.advance(seconds=timedelta(days=20).total_seconds())
    scheduling.scheduling_cycle_run()
    queued.refresh_from_db()
    assert queued.state == "Admitted"


def test_a_spent_project_budget_holds_only_its_projects_work(
    on_demand, h100_quota, alice, acme, vision, ai_dev, mia
):
    budget(alice, acme, "100", project="vision", hard_stop=True)
    other = submit_more(mia, ai_dev)
    spent_today(vision, 5)
    scheduling.scheduling_cycle_run()
    other.refresh_from_db()
    assert other.state == "Admitted"


def test_a_budget_without_a_hard_stop_holds_no_queued_work(
    on_demand, h100_quota, alice, acme, vision, ai_dev, mia
):
    budget(alice, acme, "100")
    queued = submit_more(mia, ai_dev)
    spent_today(vision, 5)
    scheduling.scheduling_cycle_run()
    queued.refresh_from_db()
    assert queued.state == "Admitted"


def test_the_cycle_reads_the_budgets_once_however_many_workloads_wait(
    on_demand, h100_quota, alice, acme, vision, ai_dev, mia
):
    budget(alice, acme, "100", hard_stop=True)
    for index in range(5):
        submit_more(mia, ai_dev if index % 2 else vision, name=f"more-{index}")
    spent_today(vision, 5)
    with CaptureQueriesContext(connection) as queries:
        scheduling.scheduling_cycle_run()
    budget_reads = [q for q in queries.captured_queries if 'FROM "billing_budget"' in q["sql"]]
    assert len(budget_reads) == 1


def test_thresholds_crossed_in_one_run_are_mailed_in_threshold_order(
    on_demand, alice, acme, vision, django_capture_on_commit_callbacks
):
    budget(alice, acme, "50", thresholds=[50, 80, 100])
    spent_today(vision, 3)  # 69.60 of 50: past all three
    worker = Worker(django_capture_on_commit_callbacks)
    worker.step(services.budgets_check)
    worker.mails.reverse()  # the worker picks the tasks up in any order
    worker.deliver()
    worker.redeliver()
    assert [m.subject for m in mail.outbox] == [
        f"Acme AI: {t}% of the monthly budget spent" for t in (50, 80, 100)
    ]
