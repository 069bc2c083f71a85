"""Each event of a reservation or a quota request is mailed once to whom it concerns, saying
what happened, however late the mail queue runs and however often its tasks are retried."""

from datetime import timedelta

import pytest
from django.core import mail

from portal import clock
from scheduling import services
from scheduling.models import Node
from scheduling.services import QuotaAsk, ReservationRequest
from tenants.permissions import Caller

from ..factories import UserFactory
from ..queued import Worker

pytestmark = pytest.mark.django_db

H100_POOL = "dgx-h100"  # 8 nodes of 8 GPUs in the demo cluster


@pytest.fixture
def operator(db):
    return UserFactory(email="ops@example.com", is_staff=True)


@pytest.fixture
def worker(django_capture_on_commit_callbacks):
    return Worker(django_capture_on_commit_callbacks)


def reserve(worker, user, organization, *, gpus=16, start=24, length=4, **fields):
    now = clock.now().replace(minute=0, second=0, microsecond=0)
    return worker.step(
        services.reservations_request,
        caller=Caller(user=user),
        organization=organization,
        request=ReservationRequest(
            gpu_class="H100-80GB",
            gpus=gpus,
            starts_at=now + timedelta(hours=start),
            ends_at=now + timedelta(hours=start + length),
            pool=H100_POOL,
            **fields,
        ),
    )


def to(user) -> list[str]:
    """The subjects mailed to ``user``, in order, from their last colon on."""
    return [m.subject.rsplit(": ", 1)[1] for m in mail.outbox if m.to == [user.email]]


def test_a_requested_then_approved_reservation_is_mailed_requested_then_approved(
    cluster, worker, alice, acme, operator
):
    [held] = reserve(worker, alice, acme)
    worker.step(services.reservation_approve, caller=Caller(user=operator), reservation=held)
    worker.deliver()
    worker.redeliver()
    assert to(alice) == ["requested, awaiting an operator's decision", "approved"]


def test_a_reservation_request_is_mailed_to_each_operator_but_not_its_approval(
    cluster, worker, alice, acme, operator
):
    [held] = reserve(worker, alice, acme)
    worker.step(services.reservation_approve, caller=Caller(user=operator), reservation=held)
    worker.deliver()
    assert to(operator) == ["requested, awaiting an operator's decision"]


def test_the_reservation_mail_names_the_gpus_the_pool_and_the_window(
    cluster, worker, alice, acme, operator
):
    [held] = reserve(worker, alice, acme)
    worker.deliver()
    message = mail.outbox[0]
    assert (
        message.subject.startswith("Reservation of 16 H100-80GB GPUs for Acme AI: "),
        "H100-80GB for Acme AI in pool dgx-h100" in message.body,
        held.starts_at.strftime("%Y-%m-%d %H:%M") in message.body,
    ) == (True, True, True)


def test_a_rejected_reservation_is_mailed_rejected_with_the_reason(
    cluster, worker, alice, acme, operator
):
    [held] = reserve(worker, alice, acme)
    worker.step(
        services.reservation_reject, caller=Caller(user=operator), reservation=held, reason="No."
    )
    worker.deliver()
    rejected = [m for m in mail.outbox if m.subject.endswith(": rejected")]
    assert ([m.to for m in rejected], "Reason: No." in rejected[0].body) == ([[alice.email]], True)


def test_a_cancelled_reservation_is_mailed_cancelled(cluster, worker, alice, acme, operator):
    [held] = reserve(worker, alice, acme)
    worker.step(services.reservation_cancel, caller=Caller(user=alice), reservation=held)
    worker.deliver()
    assert to(alice)[-1] == "cancelled"


def test_an_unapproved_reservation_whose_window_began_is_mailed_expired(
    cluster, worker, alice, acme, operator
):
    [held] = reserve(worker, alice, acme)
    worker.step(services.reservations_advance, now=held.starts_at)
    worker.deliver()
    assert to(alice)[-1] == "expired unapproved"


def test_opening_and_completing_on_time_mail_nobody(cluster, worker, alice, acme, operator):
    [held] = reserve(worker, alice, acme)
    worker.step(services.reservation_approve, caller=Caller(user=operator), reservation=held)
    worker.step(services.reservations_advance, now=held.starts_at)
    worker.step(services.reservations_advance, now=held.ends_at)
    worker.deliver()
    assert to(alice) == ["requested, awaiting an operator's decision", "approved"]


def cordon(worker, operator, count: int) -> None:
    for node in Node.objects.filter(pool__name=H100_POOL).order_by("name")[:count]:
        worker.step(services.node_cordon, caller=Caller(user=operator), node=node)


def test_a_shortfall_is_mailed_as_a_shortfall_to_the_requester_and_the_operators(
    cluster, worker, alice, acme, operator
):
    [held] = reserve(worker, alice, acme, gpus=64)
    worker.step(services.reservation_approve, caller=Caller(user=operator), reservation=held)
    cordon(worker, operator, 1)
    worker.step(services.reservations_recheck)
    mail.outbox.clear()
    worker.deliver()
    short = [m for m in mail.outbox if m.subject.endswith("8 of its 64 GPUs short")]
    assert (
        sorted(m.to[0] for m in short),
        "8 of its 64 GPUs cannot be given" in short[0].body,
    ) == (sorted([alice.email, operator.email]), True)


def test_a_requested_reservation_gone_short_is_mailed_short_not_requested(
    cluster, worker, alice, acme, operator
):
    reserve(worker, alice, acme, gpus=64)
    worker.deliver()
    cordon(worker, operator, 1)
    worker.step(services.reservations_recheck)
    worker.deliver()
    worker.redeliver()
    assert to(alice) == ["requested, awaiting an operator's decision", "8 of its 64 GPUs short"]


def test_a_shortfall_covered_again_is_mailed_covered(cluster, worker, alice, acme, operator):
    [held] = reserve(worker, alice, acme, gpus=64)
    worker.step(services.reservation_approve, caller=Caller(user=operator), reservation=held)
    [node] = Node.objects.filter(pool__name=H100_POOL).order_by("name")[:1]
    worker.step(services.node_cordon, caller=Caller(user=operator), node=node)
    worker.step(services.reservations_recheck)
    worker.step(services.node_cordon, caller=Caller(user=operator), node=node, cordoned=False)
    worker.step(services.reservations_recheck)
    worker.deliver()
    worker.redeliver()
    assert to(alice)[-2:] == ["8 of its 64 GPUs short", "covered again"]


def ask(worker, user, organization, **fields):
    return worker.step(
        services.quota_request_create,
        caller=Caller(user=user),
        organization=organization,
        ask=QuotaAsk(gpu_class="H100-80GB", amount=8, reason="Fine-tuning sprint", **fields),
    )


def test_a_quota_request_approved_is_mailed_requested_then_approved(
    cluster, worker, alice, acme, operator
):
    made = ask(worker, alice, acme)
    worker.step(services.quota_request_approve, caller=Caller(user=operator), quota_request=made)
    worker.deliver()
    worker.redeliver()
    assert to(alice) == ["requested, awaiting an operator's decision", "approved"]


def test_a_new_quota_request_is_mailed_to_each_operator(cluster, worker, alice, acme, operator):
    ask(worker, alice, acme)
    worker.deliver()
    assert to(operator) == ["requested, awaiting an operator's decision"]


def test_a_denied_quota_request_is_mailed_denied_with_the_answer(
    cluster, worker, alice, acme, operator
):
    made = ask(worker, alice, acme)
    worker.step(
        services.quota_request_reject,
        caller=Caller(user=operator),
        quota_request=made,
        reason="No.",
    )
    worker.deliver()
    denied = [m for m in mail.outbox if m.subject.endswith(": denied")]
    assert ([m.to for m in denied], "Operator's answer: No." in denied[0].body) == (
        [[alice.email]],
        True,
    )


def test_a_temporary_increase_that_ends_is_mailed_ended(cluster, worker, alice, acme, operator):
    until = clock.now() + timedelta(days=2)
    made = ask(worker, alice, acme, until=until)
    worker.step(services.quota_request_approve, caller=Caller(user=operator), quota_request=made)
    worker.step(services.quota_requests_advance, now=until)
    worker.deliver()
    assert to(alice)[-1] == "ended, taken back off the grant"
