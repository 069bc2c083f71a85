"""Invoices issued at the same moment on PostgreSQL: consecutive numbers, none twice, no gap;
credit spent once."""

from decimal import Decimal

import pytest
from django.db import connection

from billing import services
from portal import clock
from tenants.permissions import Caller

from ..factories import OrganizationFactory, ProjectFactory
from ..threads import run_together
from .conftest import DAY, rated

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("concurrent transactions are raced on PostgreSQL; set DATABASE_URL")


def test_twelve_invoices_issued_at_once_get_twelve_consecutive_numbers(operator):
    earlier = DAY.replace(year=DAY.year - 1)
    drafts = [
        services.invoice_draft(
            organization=OrganizationFactory(), year=earlier.year, month=earlier.month
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


def test_two_invoices_issued_at_once_spend_a_credit_once(operator, h100):
    project = ProjectFactory()
    organization = project.organization
    services.credit_grant(
        caller=Caller(user=operator), organization=organization, amount=Decimal(50), reason="SLA"
    )
    drafts = []
    for year in (2024, 2025):
        rated(project, starts_at=DAY.replace(year=year), cost="40")
        drafts.append(services.invoice_draft(organization=organization, year=year, month=DAY.month))
    outcomes = run_together(
        *[
            lambda invoice=invoice: services.invoice_issue(
                caller=Caller(user=operator), invoice=invoice
            )
            for invoice in drafts
        ]
    )
    assert sorted(outcome.credits for outcome in outcomes) == [Decimal(10), Decimal(40)]
