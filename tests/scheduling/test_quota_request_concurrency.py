"""Quota increases of one grant changed by concurrent transactions on PostgreSQL: every change
counts, none is lost to another's stale copy of the grant."""

from datetime import timedelta

import pytest
from django.db import connection

from portal import clock
from scheduling import services
from scheduling.models import GpuClass, QuotaGrant, QuotaRequest
from scheduling.services import QuotaAsk
from tenants.permissions import Caller

from ..factories import UserFactory
from ..threads import run_together

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("concurrent transactions are raced on PostgreSQL; set DATABASE_URL")


def test_increases_reverting_while_others_are_approved_leave_the_grant_exact(cluster, alice, acme):
    operator = UserFactory(email="ops@example.com", is_staff=True)
    grant = QuotaGrant.objects.create(
        organization=acme, gpu_class=GpuClass.objects.get(name="A100-80GB"), guarantee=0, limit=4
    )
    until = clock.now() + timedelta(hours=1)

    def ask(amount: int, until=None) -> QuotaRequest:
        return services.quota_request_create(
            caller=Caller(user=alice),
            organization=acme,
            ask=QuotaAsk(gpu_class="A100-80GB", amount=amount, reason="Sprint", until=until),
        )

    for amount in (1, 2):
        services.quota_request_approve(
            caller=Caller(user=operator), quota_request=ask(amount, until)
        )
    waiting = [ask(1) for _ in range(4)]
    outcomes = run_together(
        lambda: services.quota_requests_advance(now=until),
        *[
            (
                lambda r=r: services.quota_request_approve(
                    caller=Caller(user=operator), quota_request=r
                )
            )
            for r in waiting
        ],
    )
    grant.refresh_from_db()
    errors = [o for o in outcomes if isinstance(o, Exception)]
    assert (errors, grant.guarantee, grant.limit) == ([], 4, 8)
