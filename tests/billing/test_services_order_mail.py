"""Each event of an order is mailed once to whom it concerns, saying what happened, however
late the mail queue runs and however often its tasks are retried."""

from decimal import Decimal

import pytest
from django.core import mail

from billing import services
from billing.models import Order
from billing.services import OrderRequest
from tenants.permissions import Caller

from ..queued import Worker
from .conftest import hold, tomorrow

pytestmark = pytest.mark.django_db


@pytest.fixture
def worker(django_capture_on_commit_callbacks):
    return Worker(django_capture_on_commit_callbacks)


@pytest.fixture
def reserved(offer, cluster):
    return offer(slug="h100-reserved", name="H100 reserved", kind="reservation", price="2.4650")


def order(worker, user, organization, item="h100-reserved", *, quantity=8, hours=4):
    return worker.step(
        services.order_create,
        caller=Caller(user=user),
        organization=organization,
        request=OrderRequest(
            item=item, quantity=quantity, starts_at=tomorrow(), ends_at=tomorrow(hours)
        ),
    )


def sent() -> list[tuple[str, str]]:
    return [(m.to[0], m.subject) for m in mail.outbox]


def test_an_order_approved_by_the_items_rule_is_mailed_approved_then_fulfilled(
    offer, cluster, worker, alice, acme
):
    offer(slug="h100-reserved", name="H100 reserved", kind="reservation", auto_approve_up_to=100)
    order(worker, alice, acme)
    worker.deliver()
    assert sent() == [
        (alice.email, "Order of 8 H100 reserved for Acme AI: approved"),
        (alice.email, "Order of 8 H100 reserved for Acme AI: fulfilled"),
    ]


def test_a_submitted_order_is_mailed_to_its_creator_and_each_operator_apart(
    reserved, worker, alice, acme, operator
):
    order(worker, alice, acme)
    worker.deliver()
    assert sorted(m.to[0] for m in mail.outbox) == sorted([alice.email, operator.email])


def test_the_submitted_mail_says_it_awaits_an_operator_and_gives_the_total(
    reserved, worker, alice, acme, operator
):
    order(worker, alice, acme)
    worker.deliver()
    message = mail.outbox[0]
    assert (
        message.subject.endswith("submitted, awaiting an operator's decision"),
        "awaits an operator's decision" in message.body,
        "Total: 78.88 EUR" in message.body,
    ) == (True, True, True)


def test_an_order_an_operator_approves_is_mailed_submitted_approved_and_fulfilled_once_each(
    reserved, worker, alice, acme, operator
):
    made = order(worker, alice, acme)
    worker.step(services.order_approve, caller=Caller(user=operator), order=made)
    worker.deliver()
    worker.redeliver()
    mine = [subject.rsplit(": ", 1)[1] for to, subject in sent() if to == alice.email]
    assert mine == ["submitted, awaiting an operator's decision", "approved", "fulfilled"]


def test_a_rejected_order_is_mailed_rejected_with_the_operators_answer(
    reserved, worker, alice, acme, operator
):
    made = order(worker, alice, acme)
    worker.step(services.order_reject, caller=Caller(user=operator), order=made, reason="Full.")
    mail.outbox.clear()
    worker.deliver()
    [message] = [m for m in mail.outbox if m.subject.endswith("rejected")]
    assert (message.to, "Operator's answer: Full." in message.body) == ([alice.email], True)


def test_a_cancelled_order_is_mailed_cancelled(reserved, worker, alice, acme, operator):
    made = order(worker, alice, acme)
    worker.step(services.order_cancel, caller=Caller(user=alice), order=made)
    worker.deliver()
    assert [s for to, s in sent() if to == alice.email][-1].endswith(": cancelled")


def test_a_failed_order_is_mailed_failed_once_with_the_reason(
    reserved, worker, alice, acme, operator
):
    made = order(worker, alice, acme, quantity=64)
    hold(alice, acme, 8)  # meanwhile 8 of the pool's 64 GPUs were reserved
    worker.step(services.order_approve, caller=Caller(user=operator), order=made)
    mail.outbox.clear()
    worker.deliver()
    worker.redeliver()
    failed = [m for m in mail.outbox if m.subject.endswith(": failed")]
    assert ([m.to for m in failed], "lacks 8 of the 64 GPUs" in failed[0].body) == (
        [[alice.email]],
        True,
    )


def test_an_order_failing_again_after_a_retry_is_mailed_again(
    reserved, worker, alice, acme, operator
):
    made = order(worker, alice, acme, quantity=64)
    hold(alice, acme, 8)
    worker.step(services.order_approve, caller=Caller(user=operator), order=made)
    worker.step(services.order_fulfil_retry, caller=Caller(user=operator), order=made)
    worker.deliver()
    assert len([s for to, s in sent() if to == alice.email and s.endswith(": failed")]) == 2


def test_a_quota_packages_fulfilment_mails_no_quota_request(offer, cluster, worker, alice, acme):
    offer(
        slug="h100-package",
        name="H100 package",
        kind="quota_package",
        quantity=8,
        price="10",
        auto_approve_up_to=Decimal("1000"),
    )
    order(worker, alice, acme, item="h100-package", quantity=1, hours=24 * 30)
    worker.step(services.order_fulfil, order_id=str(Order.objects.get(organization=acme).pk))
    worker.deliver()
    assert [s for _, s in sent() if "Quota request" in s] == []


def test_a_mail_task_run_again_sends_nothing_more(reserved, worker, alice, acme, operator):
    from portal.models import SentMail  # the kernel's record of what was sent

    order(worker, alice, acme)
    worker.deliver()
    before = len(mail.outbox)
    worker.redeliver()
    assert (len(mail.outbox), SentMail.objects.count()) == (before, before)
