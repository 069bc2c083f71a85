"""One rounding rule (``billing.pricing``): each invoice line rounded half up to cents once.
The usage API's month to date is the draft invoice's subtotal to the cent, the draft says when
it was last built, and the console's invoices page lists its lines."""

from decimal import Decimal

import pytest
from django.urls import reverse

from billing import selectors
from portal import clock

from .conftest import draft

pytestmark = pytest.mark.django_db

USAGE = "/api/v1/organizations/acme/usage/"


def test_the_usage_apis_month_to_date_is_the_draft_subtotal_to_the_cent(
    half_cents, acme, alice, api_as
):
    usage = api_as(alice).get(USAGE).json()
    assert (usage["month_to_date"], str(draft(acme).subtotal)) == ("1.46", "1.46")


def test_the_usage_apis_total_cost_is_rounded_per_invoice_line(half_cents, acme, alice, api_as):
    assert api_as(alice).get(USAGE).json()["cost"] == "1.46"


def test_the_draft_answers_when_it_was_last_updated(half_cents, acme, alice, api_as):
    invoice = draft(acme)
    got = api_as(alice).get(f"/api/v1/organizations/acme/invoices/{invoice.pk}/").json()
    assert got["updated_at"].startswith(f"{clock.now():%Y-%m-%dT%H:%M}")


def test_a_rebuilt_draft_has_a_later_update_time(half_cents, acme):
    first = draft(acme).updated_at
    clock.advance(seconds=600)
    assert draft(acme).updated_at > first


def test_the_console_lists_a_drafts_lines_and_its_update_time(half_cents, acme, alice, client):
    invoice = draft(acme)
    client.force_login(alice)
    page = client.get(reverse("billing:invoices", args=["acme"])).content.decode()
    shown = [line.description in page for line in invoice.lines.all()]
    assert (shown, "updated <time datetime=" in page) == ([True, True], True)


def test_the_spend_that_budgets_count_is_the_invoices(half_cents, acme):
    spent = selectors.spend(organization=acme, at=clock.now())
    assert (spent, draft(acme).subtotal) == (Decimal("1.46"), Decimal("1.46"))
