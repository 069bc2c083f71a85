"""A property of the mail, over random sequences of order, reservation and quota request
actions: every event yields exactly one mail per recipient, saying what happened, however the
mail tasks are ordered and however often they are retried."""

import re
from collections import Counter
from datetime import timedelta
from decimal import Decimal

import pytest
from django.core import mail
from django.core.exceptions import ValidationError
from django.db import transaction
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    rule,
    run_state_machine_as_test,
)

from billing import services
from billing.models import Order
from billing.services import OrderRequest
from portal import clock
from portal.errors import Conflict
from scheduling import services as scheduling
from tenants.permissions import Caller

from ..queued import Worker

pytestmark = pytest.mark.django_db

# Each mail's body names the object it is about on a line of its own.
OBJECT_LINE = re.compile(r"^(?:Order|Reservation|Request): (\S+)$", re.MULTILINE)
REFUSED = (Conflict, ValidationError)
# What each mailed state's subject ends with; a submitted order is mailed to the operators too.
ORDER_SUBJECT_ENDS = {
    Order.State.SUBMITTED: "submitted, awaiting an operator's decision",
    Order.State.APPROVED: "approved",
    Order.State.REJECTED: "rejected",
    Order.State.CANCELLED: "cancelled",
    Order.State.FULFILLED: "fulfilled",
    Order.State.FAILED: "failed",
}
REQUESTED = "requested, awaiting an operator's decision"


def mailed() -> Counter:
    """(recipient, object id, what happened) of every mail sent."""
    return Counter(
        (m.to[0], OBJECT_LINE.search(m.body).group(1), m.subject.rsplit(": ", 1)[1])
        for m in mail.outbox
    )


def machine(*, alice, acme, operator, capture):
    base = clock.now().replace(minute=0, second=0, microsecond=0) + timedelta(days=1)
    owner, staff = Caller(user=alice), Caller(user=operator)

    class Mail(RuleBasedStateMachine):
        orders = Bundle("orders")
        reservations = Bundle("reservations")
        quota_requests = Bundle("quota_requests")

        def __init__(self):
            super().__init__()
            # Each example starts from the fixtures' database: what an earlier example held
            # would change what this one may do, and so how much its replay draws.
            self.savepoint = transaction.savepoint()
            mail.outbox.clear()
            self.worker = Worker(capture)
            self.expected: Counter = Counter()

        def expect(self, obj, what: str, *, operators: bool = False) -> None:
            self.expected[(alice.email, str(obj.pk), what)] += 1
            if operators:
                self.expected[(operator.email, str(obj.pk), what)] += 1

        def expect_order(self, order: Order) -> None:
            operators = order.state == Order.State.SUBMITTED
            self.expect(order, ORDER_SUBJECT_ENDS[order.state], operators=operators)

        @rule(
            target=orders,
            auto=st.booleans(),
            gpus=st.integers(1, 64),
            day=st.integers(0, 20),
        )
        def order(self, auto, gpus, day):
            start = base + timedelta(days=day)
            made = self.worker.step(
                services.order_create,
                caller=owner,
                organization=acme,
                request=OrderRequest(
                    item="h100-auto" if auto else "h100-reserved",
                    quantity=gpus,
                    starts_at=start,
                    ends_at=start + timedelta(hours=4),
                ),
            )
            made.refresh_from_db()
            if auto:  # approved by the item's rule, then fulfilled (or failed) at once
                self.expect(made, "approved")
            self.expect_order(made)
            return made

        @rule(order=orders)
        def approve_order(self, order):
            try:
                self.worker.step(services.order_approve, caller=staff, order=order)
            except REFUSED:
                return
            self.expect(order, "approved")
            order.refresh_from_db()
            self.expect_order(order)

        @rule(order=orders)
        def reject_order(self, order):
            try:
                self.worker.step(services.order_reject, caller=staff, order=order, reason="No.")
            except REFUSED:
                return
            self.expect_order(Order.objects.get(pk=order.pk))

        @rule(order=orders)
        def cancel_order(self, order):
            try:
                self.worker.step(services.order_cancel, caller=owner, order=order)
            except REFUSED:
                return
            self.expect_order(Order.objects.get(pk=order.pk))

        @rule(target=reservations, gpus=st.integers(1, 64), day=st.integers(0, 20))
        def reserve(self, gpus, day):
            start = base + timedelta(days=day)
            try:
                [held] = self.worker.step(
                    scheduling.reservations_request,
                    caller=owner,
                    organization=acme,
                    request=scheduling.ReservationRequest(
                        gpu_class="H100-80GB",
                        gpus=gpus,
                        starts_at=start,
                        ends_at=start + timedelta(hours=4),
                        pool="dgx-h100",
                    ),
                )
            except REFUSED:
                return []  # nothing held, nothing mailed
            self.expect(held, REQUESTED, operators=True)
            return [held]

        def decide(self, reservations, service, what, **kwargs):
            for held in reservations:
                try:
                    self.worker.step(service, reservation=held, **kwargs)
                except REFUSED:
                    continue
                self.expect(held, what)

        @rule(reservations=reservations)
        def approve_reservation(self, reservations):
            self.decide(reservations, scheduling.reservation_approve, "approved", caller=staff)

        @rule(reservations=reservations)
        def reject_reservation(self, reservations):
            self.decide(
                reservations, scheduling.reservation_reject, "rejected", caller=staff, reason="No."
            )

        @rule(reservations=consumes(reservations))
        def cancel_reservation(self, reservations):
            self.decide(reservations, scheduling.reservation_cancel, "cancelled", caller=owner)

        @rule(target=quota_requests, amount=st.integers(1, 16))
        def ask_for_quota(self, amount):
            made = self.worker.step(
                scheduling.quota_request_create,
                caller=owner,
                organization=acme,
                ask=scheduling.QuotaAsk(gpu_class="H100-80GB", amount=amount, reason="Sprint"),
            )
            self.expect(made, REQUESTED, operators=True)
            return made

        @rule(quota_request=quota_requests, approve=st.booleans())
        def decide_quota(self, quota_request, approve):
            try:
                if approve:
                    self.worker.step(
                        scheduling.quota_request_approve, caller=staff, quota_request=quota_request
                    )
                else:
                    self.worker.step(
                        scheduling.quota_request_reject,
                        caller=staff,
                        quota_request=quota_request,
                        reason="No.",
                    )
            except REFUSED:
                return
            self.expect(quota_request, "approved" if approve else "denied")

        @rule(order=st.randoms(use_true_random=False))
        def deliver(self, order):
            """The mail queue runs, its tasks picked up in any order."""
            order.shuffle(self.worker.mails)
            self.worker.deliver()

        @rule()
        def retry(self):
            """Every mail task delivered so far runs again."""
            self.worker.redeliver()

        @invariant()
        def one_mail_per_event_and_recipient(self):
            if not self.worker.mails:  # everything queued was delivered
                assert mailed() == self.expected

        def teardown(self):
            try:
                self.worker.deliver()
                assert mailed() == self.expected
            finally:
                transaction.savepoint_rollback(self.savepoint)

    return Mail


@pytest.mark.slow
def test_every_event_yields_exactly_one_mail_per_recipient(
    offer, cluster, alice, acme, operator, django_capture_on_commit_callbacks
):
    offer(slug="h100-reserved", name="H100 reserved", kind="reservation", price="2.4650")
    offer(
        slug="h100-auto",
        name="H100 reserved at once",
        kind="reservation",
        price="2.4650",
        auto_approve_up_to=Decimal("1000"),
    )
    run_state_machine_as_test(
        machine(
            alice=alice, acme=acme, operator=operator, capture=django_capture_on_commit_callbacks
        ),
        settings=settings(
            stateful_step_count=12,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        ),
    )
