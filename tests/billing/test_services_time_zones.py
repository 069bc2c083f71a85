"""An organization with a time zone has its invoice and budget months from its midnight;
records are rated by UTC hours, so a zone whose offset is not whole hours starts its months on
the UTC hour before."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from billing import selectors, services
from billing.models import Invoice
from billing.pricing import month_bounds, month_of
from tenants.permissions import Caller

from ..factories import ProjectFactory
from .conftest import DAY, ran

pytestmark = pytest.mark.django_db

TOKYO = ZoneInfo("Asia/Tokyo")
YEAR, MONTH = DAY.year, DAY.month


def test_a_month_without_a_zone_is_the_utc_month():
    assert month_of(datetime(2026, 11, 20, 12, tzinfo=UTC)) == (
        datetime(2026, 11, 1, tzinfo=UTC),
        datetime(2026, 12, 1, tzinfo=UTC),
    )


def test_a_tokyo_month_starts_at_tokyos_midnight():
    assert month_bounds(2026, 11, TOKYO) == (
        datetime(2026, 10, 31, 15, tzinfo=UTC),
        datetime(2026, 11, 30, 15, tzinfo=UTC),
    )


def test_a_moment_just_after_tokyos_midnight_is_in_tokyos_next_month():
    assert month_of(datetime(2026, 11, 30, 15, 30, tzinfo=UTC), TOKYO)[0] == datetime(
        2026, 11, 30, 15, tzinfo=UTC
    )


def test_a_half_hour_zone_starts_its_month_on_the_utc_hour_before_its_midnight():
    start, _ = month_bounds(2026, 11, ZoneInfo("Asia/Kolkata"))  # midnight is 18:30 UTC
    assert start == datetime(2026, 10, 31, 18, tzinfo=UTC)


def test_december_runs_into_january():
    assert month_bounds(2026, 12)[1] == datetime(2027, 1, 1, tzinfo=UTC)


def used_in_the_first_local_hours_of_the_month(project, zone) -> datetime:
    """Usage of ``project`` from one to two hours after the local month's start (the month
    DAY is in): in UTC, still the month before for a zone ahead of UTC."""
    start, _ = month_bounds(YEAR, MONTH, zone)
    hours = (start - DAY) / timedelta(hours=1)
    ran(project, start=hours + 1, end=hours + 2)
    services.usage_meter(now=DAY + timedelta(days=3))
    return start


def test_a_tokyo_organizations_invoice_holds_its_first_local_hours(on_demand, acme, vision):
    acme.time_zone = "Asia/Tokyo"
    acme.save()
    start = used_in_the_first_local_hours_of_the_month(vision, TOKYO)
    invoice = services.invoice_draft(organization=acme, year=YEAR, month=MONTH)
    assert (invoice.period_start, [line.hours for line in invoice.lines.all()]) == (start, [8])


def test_a_utc_organizations_invoice_leaves_those_hours_to_the_month_before(
    on_demand, acme, vision
):
    used_in_the_first_local_hours_of_the_month(vision, TOKYO)
    invoice = services.invoice_draft(organization=acme, year=YEAR, month=MONTH)
    assert invoice.lines.count() == 0


def test_the_months_drafts_use_each_organizations_zone(on_demand, acme, vision):
    acme.time_zone = "Asia/Tokyo"
    acme.save()
    start = used_in_the_first_local_hours_of_the_month(vision, TOKYO)
    services.invoices_draft_month(year=YEAR, month=MONTH)
    assert Invoice.objects.get(organization=acme).period_start == start


def test_finance_finds_a_tokyo_invoice_in_its_month(on_demand, acme, vision, operator):
    acme.time_zone = "Asia/Tokyo"
    acme.save()
    used_in_the_first_local_hours_of_the_month(vision, TOKYO)
    services.invoices_draft_month(year=YEAR, month=MONTH)
    month = selectors.invoices_of_month(caller=Caller(user=operator), year=YEAR, month=MONTH)
    assert [invoice.organization.slug for invoice in month] == ["acme"]


def test_a_months_drafting_counts_each_organization_once(on_demand, acme, globex, vision):
    globex_project = ProjectFactory(organization=globex, slug="lab")
    ran(vision, start=1, end=2)
    ran(globex_project, start=1, end=2, name="other")
    services.usage_meter(now=DAY + timedelta(days=3))
    assert services.invoices_draft_month(year=YEAR, month=MONTH) == 2
