"""Invoices issued at the same moment on PostgreSQL: consecutive numbers, none twice, no gap."""

import pytest
from django.db import connection

from billing import services
from billing.models import Invoice
from scheduling import clock
from tenants.permissions import Caller

from ..factories import OrganizationFactory
from ..threads import run_together
from .test_metering import DAY

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("concurrent transactions are raced on PostgreSQL; set DATABASE_URL")


def test_twelve_invoices_issued_at_once_get_twelve_consecutive_numbers(operator):
    drafts = [
        Invoice.objects.create(
            organization=OrganizationFactory(),
            period_start=DAY,
            period_end=DAY,
            currency="EUR",
        )
        for _ in range(12)
    ]
    outcomes = run_together(
        *[
            lambda invoice=invoice: services.invoice_issue(
                caller=Caller(user=operator), invoice=invoice
            )
            for invoice in drafts
        ]
    )
    year = clock.now().year
    assert sorted(outcome.number for outcome in outcomes) == [
        f"{year}-{n:06d}" for n in range(1, 13)
    ]
