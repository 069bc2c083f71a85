"""An invoice covers a period that has ended: issuing one earlier is refused (by the service
and in admin), and what was placed up to the issue is on it. A change of time zone applies
from the next period: a month is invoiced once, and no hour twice or never (the database
refuses a second invoice for a month too)."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import IntegrityError, transaction

from billing import services, tasks
from billing.models import BillingRecord, Invoice
from billing.pricing import month_bounds
from portal import clock
from portal.errors import Conflict
from scheduling.models import Placement
from tenants import services as tenant_services
from tenants.permissions import Caller

from .conftest import MONTH, YEAR, at, draft, metered, period_over, ran

pytestmark = pytest.mark.django_db

KIRITIMATI = "Pacific/Kiritimati"  # UTC+14


def test_a_draft_whose_month_has_not_ended_is_not_issued(on_demand, acme, vision, operator):
    metered((vision, {"start": 1, "end": 2}))
    with pytest.raises(Conflict) as refused:
        services.invoice_issue(caller=Caller(user=operator), invoice=draft(acme))
    assert (refused.value.code, Invoice.objects.get().state) == ("period_not_ended", "draft")


def test_use_rated_after_the_draft_is_on_the_issued_invoice(on_demand, acme, vision, operator):
    metered((vision, {"start": 1, "end": 2}))
    invoice = draft(acme)
    metered((vision, {"start": 5, "end": 6, "name": "later"}))
    period_over(invoice)
    issued = services.invoice_issue(caller=Caller(user=operator), invoice=invoice)
    assert issued.subtotal == Decimal("46.40")


def test_use_placed_before_the_issue_but_not_yet_metered_is_on_the_issued_invoice(
    on_demand, acme, vision, operator
):
    metered((vision, {"start": 1, "end": 2}))
    invoice = draft(acme)
    ran(vision, start=5, end=6, name="unmetered")
    period_over(invoice)
    issued = services.invoice_issue(caller=Caller(user=operator), invoice=invoice)
    assert issued.subtotal == Decimal("46.40")


def test_every_record_of_an_issued_month_is_on_its_invoice(on_demand, acme, vision, operator):
    ran(vision, start=1)  # runs past the month's end
    services.usage_meter(now=at(3))
    invoice = draft(acme)
    period_over(invoice)
    issued = services.invoice_issue(caller=Caller(user=operator), invoice=invoice)
    services.usage_meter()
    in_month = BillingRecord.objects.filter(
        starts_at__gte=issued.period_start, starts_at__lt=issued.period_end
    )
    assert (
        sum(line.hours for line in issued.lines.all())
        == sum(r.quantity_seconds for r in in_month) / 3600
    )


def patched_to(organization, zone: str, owner) -> None:
    tenant_services.organization_update(
        caller=Caller(user=owner), organization=organization, time_zone=zone
    )


def test_a_time_zone_change_keeps_the_drafted_months_period(on_demand, acme, vision, alice):
    metered((vision, {"start": 1, "end": 2}))
    first = draft(acme)
    patched_to(acme, KIRITIMATI, alice)
    acme.refresh_from_db()
    again = draft(acme)
    assert (Invoice.objects.count(), again.pk, again.period_start) == (
        1,
        first.pk,
        first.period_start,
    )


def test_drafting_the_month_again_after_a_time_zone_change_makes_one_draft(
    on_demand, acme, vision, alice, operator
):
    metered((vision, {"start": 1, "end": 2}))
    services.invoices_draft_month(year=YEAR, month=MONTH)
    patched_to(acme, KIRITIMATI, alice)
    services.invoices_draft_month(year=YEAR, month=MONTH)
    assert Invoice.objects.filter(organization=acme).count() == 1


def test_the_month_after_a_time_zone_change_starts_where_the_last_one_ended(
    on_demand, acme, vision, alice
):
    metered((vision, {"start": 1, "end": 2}))
    first = draft(acme)
    patched_to(acme, KIRITIMATI, alice)
    acme.refresh_from_db()
    following = first.period_end + timedelta(days=15)
    after = services.invoice_draft(organization=acme, year=following.year, month=following.month)
    # January in Kiritimati would start 14 hours before the UTC December's end.
    assert (after.period_start, after.period_end.hour) == (first.period_end, 10)


def test_the_database_refuses_a_second_invoice_for_a_month(acme):
    start = datetime(2026, 11, 1, tzinfo=UTC)
    fields = {"organization": acme, "month": start.date(), "currency": "EUR"}
    Invoice.objects.create(period_start=start, period_end=start + timedelta(days=30), **fields)
    with pytest.raises(IntegrityError), transaction.atomic():
        Invoice.objects.create(period_start=start - timedelta(hours=14), period_end=start, **fields)


def test_the_period_is_refused_before_its_end_and_issued_after_it(
    on_demand, acme, vision, operator
):
    """The clock at the period's end exactly: issued (an hour before: refused)."""
    metered((vision, {"start": 1, "end": 2}))
    invoice = draft(acme)
    clock.advance(seconds=(invoice.period_end - clock.now()).total_seconds() - 3600)
    with pytest.raises(Conflict):
        services.invoice_issue(caller=Caller(user=operator), invoice=invoice)
    clock.advance(seconds=3600)
    assert services.invoice_issue(caller=Caller(user=operator), invoice=invoice).number


def test_the_beat_after_a_long_gap_refreshes_a_western_zones_month_that_ended_since(
    on_demand, acme, vision, alice
):
    """Los Angeles' month ends eight hours into the next UTC month: a beat just before that
    drafts it, and the next one, a month later (the worker was down), still adds its last
    hours."""
    patched_to(acme, "America/Los_Angeles", alice)
    acme.refresh_from_db()
    _, utc_end = month_bounds(YEAR, MONTH)
    hours = (utc_end - at(0)) / timedelta(hours=1)
    late = ran(vision, start=hours + 2)  # from 18:00 on the 31st in LA
    for beat in (utc_end + timedelta(hours=3), utc_end + timedelta(days=31, hours=1)):
        clock.advance(seconds=(beat - clock.now()).total_seconds())
        services.usage_meter()
        tasks.invoices_draft()
        Placement.objects.filter(pk=late.pk).update(ended_at=at(hours + 4))  # ends at 20:00
    invoice = Invoice.objects.get(organization=acme)
    assert (invoice.month, invoice.subtotal) == (at(0).date().replace(day=1), Decimal("46.40"))


def test_a_month_drafted_again_after_a_void_keeps_its_period_after_a_time_zone_change(
    on_demand, acme, vision, alice, operator
):
    metered((vision, {"start": 1, "end": 2}))
    first = draft(acme)
    period_over(first)
    issued = services.invoice_issue(caller=Caller(user=operator), invoice=first)
    patched_to(acme, KIRITIMATI, alice)
    acme.refresh_from_db()
    services.invoice_void(caller=Caller(user=operator), invoice=issued, reason="Wrong tax")
    again = draft(acme)
    assert (again.pk != first.pk, again.period_start, again.period_end) == (
        True,
        first.period_start,
        first.period_end,
    )
