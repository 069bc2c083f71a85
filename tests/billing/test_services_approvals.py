"""The one approval workflow, as each of its three kinds goes through it: orders (billing),
reservations and quota requests (scheduling). Submitted, then approved or rejected with a
reason by an operator, or cancelled by its organization; each step audited and published."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError

from billing import services
from billing.models import Order
from billing.services import OrderRequest
from portal import clock
from portal.errors import Conflict, Forbidden
from scheduling import services as scheduling
from scheduling.models import QuotaRequest, Reservation
from tenants.models import AuditEvent
from tenants.permissions import Caller

pytestmark = pytest.mark.django_db


def _tomorrow(hours: float = 0):
    return clock.now().replace(minute=0, second=0, microsecond=0) + timedelta(days=1, hours=hours)


def _order(user, organization):
    return services.order_create(
        caller=Caller(user=user),
        organization=organization,
        request=OrderRequest(
            item="h100-reserved", quantity=8, starts_at=_tomorrow(), ends_at=_tomorrow(4)
        ),
    )


def _reservation(user, organization):
    [held] = scheduling.reservations_request(
        caller=Caller(user=user),
        organization=organization,
        request=scheduling.ReservationRequest(
            gpu_class="H100-80GB", gpus=4, starts_at=_tomorrow(), ends_at=_tomorrow(4)
        ),
    )
    return held


def _quota_request(user, organization):
    return scheduling.quota_request_create(
        caller=Caller(user=user),
        organization=organization,
        ask=scheduling.QuotaAsk(gpu_class="H100-80GB", amount=8, reason="Fine-tuning sprint"),
    )


# Each kind: how one is submitted, its services, the audit actions' prefix, its name on the
# operators' approvals page, the id its events carry, and the states its model keeps for the
# workflow's approved and rejected.
KINDS = {
    "order": dict(
        submit=_order,
        approve=lambda caller, it: services.order_approve(caller=caller, order=it),
        reject=lambda caller, it, reason: services.order_reject(
            caller=caller, order=it, reason=reason
        ),
        prefix="order",
        page="order",
        event_id="order_id",
        approved=Order.State.APPROVED,
        rejected=Order.State.REJECTED,
        submitted=Order.State.SUBMITTED,
    ),
    "reservation": dict(
        submit=_reservation,
        approve=lambda caller, it: scheduling.reservation_approve(caller=caller, reservation=it),
        reject=lambda caller, it, reason: scheduling.reservation_reject(
            caller=caller, reservation=it, reason=reason
        ),
        prefix="reservation",
        page="reservation",
        event_id="reservation_id",
        approved=Reservation.State.APPROVED,
        rejected=Reservation.State.REJECTED,
        submitted=Reservation.State.REQUESTED,
    ),
    "quota_request": dict(
        submit=_quota_request,
        approve=lambda caller, it: scheduling.quota_request_approve(
            caller=caller, quota_request=it
        ),
        reject=lambda caller, it, reason: scheduling.quota_request_reject(
            caller=caller, quota_request=it, reason=reason
        ),
        prefix="quota_request",
        page="quota-request",
        event_id="quota_request_id",
        approved=QuotaRequest.State.APPROVED,
        # Stored and shown as "denied" (API users read it so): the workflow's rejected.
        rejected=QuotaRequest.State.DENIED,
        submitted=QuotaRequest.State.REQUESTED,
    ),
}


@pytest.fixture(params=list(KINDS))
def kind(request, offer, cluster):
    offer(slug="h100-reserved", kind="reservation", price="2.4650")
    return KINDS[request.param]


def _changes(callbacks, event_id) -> list[str]:
    """The changes published for a kind's events (by its id's name; each event once, however
    many subscribe to it)."""
    keywords = [getattr(c, "keywords", {}) for c in callbacks]
    return sorted({k["change"] for k in keywords if event_id in k and "change" in k})


def test_an_operators_approval_records_who_decided_and_when(kind, alice, acme, operator):
    submitted = kind["submit"](alice, acme)
    kind["approve"](Caller(user=operator), submitted)
    submitted.refresh_from_db()
    assert (submitted.state, submitted.decided_by, submitted.decided_at is not None) == (
        kind["approved"],
        operator,
        True,
    )


def test_an_approval_is_audited_and_published(
    kind, alice, acme, operator, django_capture_on_commit_callbacks
):
    submitted = kind["submit"](alice, acme)
    with django_capture_on_commit_callbacks() as callbacks:
        kind["approve"](Caller(user=operator), submitted)
    audited = AuditEvent.objects.filter(action=f"{kind['prefix']}.approve", actor=operator)
    assert (audited.count(), _changes(callbacks, kind["event_id"])) == (1, [kind["approved"]])


def test_a_rejection_keeps_its_reason(kind, alice, acme, operator):
    submitted = kind["submit"](alice, acme)
    kind["reject"](Caller(user=operator), submitted, "  Maintenance window.  ")
    submitted.refresh_from_db()
    assert (submitted.state, submitted.decision_reason, submitted.decided_by) == (
        kind["rejected"],
        "Maintenance window.",
        operator,
    )


def test_a_rejection_is_audited_and_published(
    kind, alice, acme, operator, django_capture_on_commit_callbacks
):
    submitted = kind["submit"](alice, acme)
    with django_capture_on_commit_callbacks() as callbacks:
        kind["reject"](Caller(user=operator), submitted, "No.")
    audited = AuditEvent.objects.filter(action=f"{kind['prefix']}.reject", actor=operator)
    assert (audited.count(), _changes(callbacks, kind["event_id"])) == (1, [kind["rejected"]])


def test_a_rejection_without_a_reason_is_refused_and_changes_nothing(kind, alice, acme, operator):
    submitted = kind["submit"](alice, acme)
    with pytest.raises(ValidationError) as refused:
        kind["reject"](Caller(user=operator), submitted, "   ")
    submitted.refresh_from_db()
    assert ("reason" in refused.value.message_dict, submitted.state) == (True, kind["submitted"])


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_a_decided_one_cannot_be_decided_again(kind, decision, alice, acme, operator):
    submitted = kind["submit"](alice, acme)
    kind["approve"](Caller(user=operator), submitted)
    with pytest.raises(Conflict):
        if decision == "approve":
            kind["approve"](Caller(user=operator), submitted)
        else:
            kind["reject"](Caller(user=operator), submitted, "Too late.")


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_only_an_operator_decides(kind, decision, alice, acme):
    submitted = kind["submit"](alice, acme)
    with pytest.raises(Forbidden):
        if decision == "approve":
            kind["approve"](Caller(user=alice), submitted)
        else:
            kind["reject"](Caller(user=alice), submitted, "Mine.")
    submitted.refresh_from_db()
    assert submitted.state == kind["submitted"]


CANCELLABLE = {
    "order": (
        _order,
        lambda caller, it: services.order_cancel(caller=caller, order=it),
        Order.State.CANCELLED,
    ),
    "reservation": (
        _reservation,
        lambda caller, it: scheduling.reservation_cancel(caller=caller, reservation=it),
        Reservation.State.CANCELLED,
    ),
}


@pytest.fixture(params=list(CANCELLABLE))
def cancellable(request, offer, cluster):
    offer(slug="h100-reserved", kind="reservation", price="2.4650")
    return request.param, *CANCELLABLE[request.param]


def test_its_organization_cancels_one_that_waits_and_it_is_audited_and_published(
    cancellable, alice, acme, django_capture_on_commit_callbacks
):
    name, submit, cancel, cancelled = cancellable
    submitted = submit(alice, acme)
    with django_capture_on_commit_callbacks() as callbacks:
        cancel(Caller(user=alice), submitted)
    submitted.refresh_from_db()
    audited = AuditEvent.objects.filter(action=f"{name}.cancel", actor=alice)
    assert (submitted.state, audited.count(), _changes(callbacks, f"{name}_id")) == (
        cancelled,
        1,
        [cancelled],
    )


def test_one_approved_may_still_be_cancelled(cancellable, alice, acme, operator):
    name, submit, cancel, cancelled = cancellable
    submitted = submit(alice, acme)
    KINDS[name]["approve"](Caller(user=operator), submitted)
    cancel(Caller(user=alice), submitted)
    submitted.refresh_from_db()
    assert submitted.state == cancelled


def test_a_cancelled_one_cannot_be_approved(cancellable, alice, acme, operator):
    name, submit, cancel, _ = cancellable
    submitted = submit(alice, acme)
    cancel(Caller(user=alice), submitted)
    with pytest.raises(Conflict):
        KINDS[name]["approve"](Caller(user=operator), submitted)


def test_a_cancelled_one_cannot_be_cancelled_again(cancellable, alice, acme):
    _, submit, cancel, _ = cancellable
    submitted = submit(alice, acme)
    cancel(Caller(user=alice), submitted)
    with pytest.raises(Conflict):
        cancel(Caller(user=alice), submitted)


def test_a_member_cannot_cancel(cancellable, alice, mia, acme):
    _, submit, cancel, _ = cancellable
    submitted = submit(alice, acme)
    with pytest.raises(Forbidden):
        cancel(Caller(user=mia), submitted)


def test_an_operator_approves_each_kind_from_the_approvals_page(
    kind, alice, acme, operator, client
):
    submitted = kind["submit"](alice, acme)
    client.force_login(operator)
    client.post(f"/staff/approvals/{kind['page']}/{submitted.pk}/approve/")
    submitted.refresh_from_db()
    assert submitted.state == kind["approved"]


def test_an_operator_rejects_each_kind_from_the_approvals_page_with_a_reason(
    kind, alice, acme, operator, client
):
    submitted = kind["submit"](alice, acme)
    client.force_login(operator)
    client.post(f"/staff/approvals/{kind['page']}/{submitted.pk}/reject/", {"reason": "Full."})
    submitted.refresh_from_db()
    assert (submitted.state, submitted.decision_reason) == (kind["rejected"], "Full.")
