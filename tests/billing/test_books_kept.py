"""A month's books are computed once and kept: an ended month's until something they read
changes (a cost model dated back into it, a credit note), the month under way's for at most
PORTAL_BOOKS_REFRESH_SECONDS; the staff page says when they were computed."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from billing import services
from billing.models import CostModel, Invoice
from billing.pricing import month_bounds
from billing.selectors import month_books
from portal import clock
from scheduling.models import NodePool
from tenants.permissions import Caller

from .conftest import MONTH, YEAR

pytestmark = pytest.mark.django_db

TERMS = {
    "purchase_price_per_gpu": Decimal("36000.00"),
    "lifetime_months": 50,
    "nameplate_watts": 700,
    "price_per_kwh": Decimal("0.2000"),
}


@pytest.fixture
def costed(cluster, operator):
    """dgx-h100 costs 1.14 a GPU-hour from now."""
    services.cost_model_add(
        caller=Caller(user=operator), pool=NodePool.objects.get(name="dgx-h100"), **TERMS
    )


def month_ended() -> None:
    """The clock moved to two days after the end of the fixtures' month."""
    _, ends_at = month_bounds(YEAR, MONTH)
    clock.advance(seconds=(ends_at - clock.now()).total_seconds() + 2 * 86400)


def availability_reads(queries) -> int:
    """Statements that read the nodes' availability: the books read it for each pool's
    hours and cost, the key of an ended month once."""
    return sum("scheduling_nodeavailability" in query["sql"] for query in queries)


def revenue(kept) -> Decimal:
    return sum((pool.revenue for pool in kept.pools), Decimal(0))


def h100(kept):
    return next(pool for pool in kept.pools if pool.pool_name == "dgx-h100")


def test_an_ended_month_unchanged_is_not_computed_again(costed):
    month_ended()
    with CaptureQueriesContext(connection) as first:
        computed = month_books(year=YEAR, month=MONTH)
    clock.advance(seconds=3600)
    with CaptureQueriesContext(connection) as again:
        kept = month_books(year=YEAR, month=MONTH)

    assert kept.computed_at == computed.computed_at
    assert h100(kept).cost == h100(computed).cost > 0
    assert availability_reads(first) > 1
    assert availability_reads(again) == 1


def test_a_cost_model_dated_back_into_an_ended_month_is_in_its_books(costed):
    month_ended()
    before = month_books(year=YEAR, month=MONTH)
    first = CostModel.objects.get()
    # Dated back by hand (the service refuses the past): a correction of the month's costs
    # from an hour after the first version on.
    CostModel.objects.create(
        pool=first.pool,
        effective_from=first.effective_from + timedelta(hours=1),
        **{**TERMS, "purchase_price_per_gpu": Decimal("72000.00")},
    )

    after = month_books(year=YEAR, month=MONTH)

    assert after.computed_at > before.computed_at
    assert h100(after).cost > h100(before).cost


def test_a_credit_note_on_an_ended_months_invoice_is_in_its_revenue(invoice, operator):
    month_ended()
    caller = Caller(user=operator)
    services.invoice_issue(caller=caller, invoice=invoice)
    before = month_books(year=YEAR, month=MONTH)

    services.credit_note_issue(
        caller=caller,
        invoice=Invoice.objects.get(pk=invoice.pk),
        amount=Decimal("10.00"),
        reason="Outage",
    )
    after = month_books(year=YEAR, month=MONTH)

    assert revenue(before) > 0
    assert revenue(after) == revenue(before) - Decimal("10.00")


def test_the_month_under_way_is_kept_for_the_refresh_seconds(costed, operator, settings):
    settings.PORTAL_BOOKS_REFRESH_SECONDS = 300
    now = clock.now()
    computed = month_books(year=now.year, month=now.month)
    CostModel.objects.filter(pool__name="dgx-h100").update(
        purchase_price_per_gpu=Decimal("72000.00")
    )

    clock.advance(seconds=60)
    kept = month_books(year=now.year, month=now.month)
    clock.advance(seconds=300)
    recomputed = month_books(year=now.year, month=now.month)

    assert (kept.computed_at, h100(kept).cost) == (computed.computed_at, h100(computed).cost)
    assert recomputed.computed_at > computed.computed_at
    assert h100(recomputed).cost > h100(computed).cost


def test_the_page_says_when_an_ended_months_figures_were_computed(costed, operator, client):
    month_ended()
    computed = month_books(year=YEAR, month=MONTH)
    client.force_login(operator)

    page = client.get(reverse("billing:books"), {"month": f"{YEAR}-{MONTH:02d}"}).content.decode()

    assert f"Computed at {computed.computed_at:%Y-%m-%d %H:%M:%S} UTC" in page
    assert "the month has ended" in page


def test_the_page_says_the_month_under_way_is_computed_again(costed, operator, client, settings):
    settings.PORTAL_BOOKS_REFRESH_SECONDS = 120
    client.force_login(operator)
    page = client.get(reverse("billing:books")).content.decode()
    assert "computed again at most every 120 seconds" in page
