"""The operators' approval screens: the same approve and reject (with a reason) actions for
orders, reservations and quota requests, each through its service; and the admin actions that
queue work do it through a service's event, never by queuing a task themselves."""

from datetime import timedelta

import pytest

from billing import services
from billing import tasks as billing_tasks
from billing.models import Invoice, Order
from portal import clock
from scheduling import tasks as scheduling_tasks
from scheduling.models import Cluster, ProvisioningRecord, QuotaRequest, Reservation
from tenants.permissions import Caller

from .test_services_approvals import KINDS, _order, _quota_request, _reservation

pytestmark = pytest.mark.django_db

# Each kind: its admin page, how one is submitted, and the states it reaches.
PAGES = {
    "order": ("/admin/billing/order/", _order, Order.State.APPROVED, Order.State.REJECTED),
    "reservation": (
        "/admin/scheduling/reservation/",
        _reservation,
        Reservation.State.APPROVED,
        Reservation.State.REJECTED,
    ),
    "quota_request": (
        "/admin/scheduling/quotarequest/",
        _quota_request,
        QuotaRequest.State.APPROVED,
        QuotaRequest.State.DENIED,
    ),
}


@pytest.fixture(params=list(PAGES))
def page(request, offer, cluster):
    offer(slug="h100-reserved", kind="reservation", price="2.4650")
    return request.param, *PAGES[request.param]


def _approve(finance, url, pk):
    """The approve action, and its details page's Apply where the kind asks for details."""
    return finance.post(url, {"action": "approve", "_selected_action": [str(pk)], "apply": "1"})


def test_an_operator_approves_each_kind_from_its_list(page, finance, alice, acme):
    _, url, submit, approved, _ = page
    submitted = submit(alice, acme)
    _approve(finance, url, submitted.pk)
    submitted.refresh_from_db()
    assert submitted.state == approved


def test_rejecting_asks_for_the_reason_first(page, finance, alice, acme):
    _, url, submit, _, _ = page
    submitted = submit(alice, acme)
    state = submitted.state
    response = finance.post(url, {"action": "reject", "_selected_action": [str(submitted.pk)]})
    submitted.refresh_from_db()
    assert (response.status_code, 'name="reason"' in response.content.decode()) == (200, True)
    assert submitted.state == state


def test_an_operator_rejects_each_kind_with_its_reason(page, finance, alice, acme):
    _, url, submit, _, rejected = page
    submitted = submit(alice, acme)
    finance.post(
        url,
        {
            "action": "reject",
            "_selected_action": [str(submitted.pk)],
            "reason": "Maintenance.",
            "apply": "Reject",
        },
    )
    submitted.refresh_from_db()
    assert (submitted.state, submitted.decision_reason) == (rejected, "Maintenance.")


def test_each_kinds_list_shows_the_waiting_before_the_decided(page, finance, alice, acme, operator):
    kind, url, submit, _, _ = page
    decided, waiting = submit(alice, acme), submit(alice, acme)
    KINDS[kind]["reject"](Caller(user=operator), decided, "No.")
    listing = finance.get(url).content.decode()
    assert listing.index(f'value="{waiting.pk}"') < listing.index(f'value="{decided.pk}"')


def test_approving_a_quota_request_asks_for_the_amount_and_end_first(
    offer, cluster, finance, alice, acme
):
    made = _quota_request(alice, acme)
    response = finance.post(
        "/admin/scheduling/quotarequest/", {"action": "approve", "_selected_action": [made.pk]}
    )
    made.refresh_from_db()
    assert (response.status_code, 'name="amount"' in response.content.decode(), made.state) == (
        200,
        True,
        QuotaRequest.State.REQUESTED,
    )


def test_an_operator_grants_a_quota_request_another_amount(offer, cluster, finance, alice, acme):
    made = _quota_request(alice, acme)
    finance.post(
        "/admin/scheduling/quotarequest/",
        {"action": "approve", "_selected_action": [made.pk], "amount": "4", "apply": "Approve"},
    )
    made.refresh_from_db()
    assert (made.state, made.granted_amount) == (QuotaRequest.State.APPROVED, 4)


def test_retrying_a_failed_order_queues_its_fulfilment_again(
    offer, cluster, finance, alice, acme, django_capture_on_commit_callbacks
):
    offer(slug="h100-reserved", kind="reservation", price="2.4650")
    made = _order(alice, acme)
    Order.objects.filter(pk=made.pk).update(state=Order.State.FAILED)
    with django_capture_on_commit_callbacks() as callbacks:
        finance.post("/admin/billing/order/", {"action": "retry", "_selected_action": [made.pk]})
    queued = [c.keywords for c in callbacks if c.func == billing_tasks.order_fulfil.delay]
    assert queued == [{"order_id": str(made.pk)}]


def rerun(finance, record, capture) -> list:
    with capture() as callbacks:
        finance.post(
            "/admin/scheduling/provisioningrecord/",
            {"action": "reprovision", "_selected_action": [record.pk]},
        )
    return callbacks


def test_running_a_projects_provisioning_again_queues_it(
    finance, ai_dev, django_capture_on_commit_callbacks
):
    record = ProvisioningRecord.objects.create(project=ai_dev)
    callbacks = rerun(finance, record, django_capture_on_commit_callbacks)
    queued = [c for c in callbacks if c.func == scheduling_tasks.project_provision_in_cluster]
    assert [c.keywords for c in queued] == [{"project_id": str(ai_dev.pk)}]


def test_running_a_projects_provisioning_again_in_one_cluster_queues_it_there(
    finance, ai_dev, django_capture_on_commit_callbacks
):
    us_east = Cluster.objects.create(name="us-east", region="us-east", backend="simulated")
    record = ProvisioningRecord.objects.create(project=ai_dev, cluster=us_east)
    callbacks = rerun(finance, record, django_capture_on_commit_callbacks)
    queued = [c for c in callbacks if c.func == scheduling_tasks.project_provision_in_cluster]
    assert [c.keywords for c in queued] == [{"project_id": str(ai_dev.pk), "cluster": "us-east"}]


def test_running_the_clusters_provisioning_again_queues_it(
    finance, db, django_capture_on_commit_callbacks
):
    record = ProvisioningRecord.objects.create(project=None, scope="cluster")
    callbacks = rerun(finance, record, django_capture_on_commit_callbacks)
    assert [c.func for c in callbacks] == [scheduling_tasks.cluster_provision_in_cluster]


def issued(organization, operator) -> Invoice:
    """The invoice of ``organization`` for the month before last (nothing used, its period
    over in any time zone), issued."""
    last_month = clock.now().replace(day=1) - timedelta(days=40)
    draft = services.invoice_draft(
        organization=organization, year=last_month.year, month=last_month.month
    )
    return services.invoice_issue(caller=Caller(user=operator), invoice=draft)


def test_an_operator_marks_an_issued_invoice_paid(finance, acme, operator):
    invoice = issued(acme, operator)
    finance.post(
        "/admin/billing/invoice/", {"action": "mark_paid", "_selected_action": [invoice.pk]}
    )
    invoice.refresh_from_db()
    assert invoice.state == Invoice.State.PAID


def test_an_operator_voids_an_issued_invoice_with_a_reason(finance, acme, operator):
    invoice = issued(acme, operator)
    finance.post(
        "/admin/billing/invoice/",
        {"action": "void", "_selected_action": [invoice.pk], "reason": "Wrong", "apply": "Void"},
    )
    invoice.refresh_from_db()
    assert invoice.state == Invoice.State.VOID
