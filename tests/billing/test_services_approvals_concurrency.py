"""The approval workflow's steps raced by concurrent transactions on PostgreSQL: of an approval,
a rejection and a cancellation of one waiting row, one wins and the others are refused."""

import pytest
from django.db import connection

from portal.errors import Conflict
from tenants.models import AuditEvent
from tenants.permissions import Caller

from ..threads import run_together
from .test_services_approvals import CANCELLABLE, KINDS

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("concurrent transactions are raced on PostgreSQL; set DATABASE_URL")


@pytest.mark.parametrize("name", list(KINDS))
def test_one_of_an_approval_and_a_rejection_racing_wins(
    name, offer, cluster, alice, acme, operator
):
    offer(slug="h100-reserved", kind="reservation", price="2.4650")
    kind = KINDS[name]
    submitted = kind["submit"](alice, acme)
    outcomes = run_together(
        lambda: kind["approve"](Caller(user=operator), submitted),
        lambda: kind["reject"](Caller(user=operator), submitted, "No."),
    )
    submitted.refresh_from_db()
    decided = AuditEvent.objects.filter(
        action__in=[f"{kind['prefix']}.approve", f"{kind['prefix']}.reject"]
    )
    [won] = [o for o in outcomes if not isinstance(o, Exception)]
    refused = [type(o) for o in outcomes if isinstance(o, Exception)]
    assert (refused, decided.count(), submitted.state) == ([Conflict], 1, won.state)


@pytest.mark.parametrize("name", list(CANCELLABLE))
def test_one_of_an_approval_and_a_cancellation_racing_wins(
    name, offer, cluster, alice, acme, operator
):
    offer(slug="h100-reserved", kind="reservation", price="2.4650")
    submit, cancel, cancelled = CANCELLABLE[name]
    submitted = submit(alice, acme)
    outcomes = run_together(
        lambda: KINDS[name]["approve"](Caller(user=operator), submitted),
        lambda: cancel(Caller(user=alice), submitted),
    )
    submitted.refresh_from_db()
    # An approved one may still be cancelled: either order ends cancelled, or the approval
    # is refused because the cancellation came first.
    errors = [type(o) for o in outcomes if isinstance(o, Exception)]
    assert (submitted.state, errors in ([], [Conflict])) == (cancelled, True)
