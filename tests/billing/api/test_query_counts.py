"""List endpoints lock their query count: it does not grow with the rows listed (no N+1)."""

import csv
import io
from datetime import timedelta

import pytest

from billing import services
from portal import clock
from tenants.models import Organization

from ...factories import ProjectFactory
from ...queries import assert_list_queries
from ..conftest import (
    budget,
    cancelled,
    granted,
    hours_ago,
    order,
    ran,
    reservation,
    spent_today,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("mid_month")]

ORG = "/api/v1/organizations/acme"


def grants(response) -> int:
    return len(response.json()["grants"])


def usage_rows(response) -> int:
    return len(response.json()["rows"])


def csv_rows(response) -> int:
    return len(list(csv.reader(io.StringIO(response.content.decode())))) - 1


@pytest.fixture
def add_rows(offer, operator, alice, acme, vision):
    """A row more in each list: a catalog item, an order, a cancellation charge, an invoice of
    a month before, a project's budget, a credit grant, a project's use this month (a line of
    this month's invoice) and a run of vision's on its line."""
    made = []

    def add(count: int) -> None:
        for _ in range(count):
            n = len(made)
            made.append(n)
            offer(slug=f"item-{n}")
            order(alice, acme, quantity=1)
            held = cancelled(alice, reservation(alice, acme, starts_in=10 + n, gpus=1))
            services.cancellation_charge_record(reservation_id=str(held.pk))
            before = clock.now().replace(day=1) - timedelta(days=28 * (n + 1))
            services.invoice_draft(organization=acme, year=before.year, month=before.month)
            project = ProjectFactory(organization=acme, slug=f"p-{n}")
            budget(alice, acme, "100", project=project.slug)
            granted(acme, operator, "10")
            spent_today(project, 1)
            ran(vision, start=hours_ago(30 + n), end=hours_ago(29.5 + n), name=f"r{n}")
            services.usage_meter()

    return add


# endpoint: queries for a session-authenticated list (and how to count its rows)
LOCKED = {
    f"{ORG}/catalog/": (6, None),
    f"{ORG}/orders/": (5, None),
    f"{ORG}/cancellation-charges/": (5, None),
    f"{ORG}/invoices/": (6, None),
    f"{ORG}/budgets/": (9, None),  # spend reads the contract credits too
    f"{ORG}/credits/": (6, grants),
    f"{ORG}/usage/": (15, usage_rows),  # the credits, and the spend that counts them
}

# The operator API's lists, through an operator token: the token, a count, a page (and the
# invoices' lines).
OPERATOR_LOCKED = {
    "/api/v1/operator/orders/": 3,
    "/api/v1/operator/invoices/": 4,
    "/api/v1/operator/credits/": 3,
}


@pytest.mark.parametrize("url", list(LOCKED))
def test_a_list_takes_the_same_queries_for_many_rows_as_for_one(url, alice, api_as, add_rows):
    queries, rows = LOCKED[url]
    assert_list_queries(
        api_as(alice), url, add_rows=add_rows, queries=queries, **({"rows": rows} if rows else {})
    )


def test_a_lines_usage_takes_the_same_queries_for_many_runs_as_for_one(
    alice, acme, vision, api_as, add_rows
):
    def line_usage() -> str:
        """The usage behind vision's line of this month's draft, drafted again."""
        now = clock.now()
        invoice = services.invoice_draft(organization=acme, year=now.year, month=now.month)
        line = invoice.lines.get(project=vision)
        return f"{ORG}/invoices/{invoice.pk}/lines/{line.pk}/usage/"

    assert_list_queries(api_as(alice), line_usage, add_rows=add_rows, queries=10)


def test_a_months_export_takes_the_same_queries_for_many_invoices_as_for_one(
    finance, acme, add_rows
):
    """Finance's CSV of a month: a row per line of every organization's invoice."""
    now = clock.now()

    def month() -> str:
        for organization in Organization.objects.all():
            services.invoice_draft(organization=organization, year=now.year, month=now.month)
        return f"/api/v1/invoices/{now.year}/{now.month}/export/csv/"

    assert_list_queries(finance, month, add_rows=add_rows, queries=4, rows=csv_rows)


@pytest.mark.parametrize("url", list(OPERATOR_LOCKED))
def test_an_operator_list_takes_the_same_queries_for_many_rows_as_for_one(url, ops, add_rows):
    assert_list_queries(ops[1], url, add_rows=add_rows, queries=OPERATOR_LOCKED[url])
