"""Usage is counted per unit: whole GPUs and GPU shares in GPU-hours, MIG instances in
instance-hours of their profile, never added together; the spend budgets count is the
invoices'."""

from datetime import timedelta
from decimal import Decimal

import pytest

from billing import charts, selectors
from portal import clock
from tenants.permissions import Caller

from .conftest import DAY, draft

pytestmark = pytest.mark.django_db

USAGE = "/api/v1/organizations/acme/usage/"
PAGE = "/orgs/acme/usage/"


def summary(alice, acme):
    now = clock.now()
    start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    end = (start + timedelta(days=32)).replace(day=1)
    return selectors.usage_summary(
        caller=Caller(user=alice), organization=acme, starts_at=start, ends_at=end
    )


def test_the_gpu_hour_total_adds_no_mig_instance_hours(mixed, alice, acme):
    assert summary(alice, acme).gpu_hours == Decimal("8.0000")


def test_mig_use_is_totalled_in_instance_hours_of_its_class_and_profile(mixed, alice, acme):
    totals = {
        (t["gpu_class"], t["mig_profile"]): (t["gpu_hours"], t["mig_instance_hours"])
        for t in summary(alice, acme).totals
    }
    assert totals == {
        ("A100-80GB", "mig-1g.10gb"): (None, Decimal("2.0000")),
        ("H100-80GB", ""): (Decimal("8.0000"), None),
    }


def test_a_mig_row_counts_instance_hours_and_no_gpu_hours(mixed, alice, acme):
    rows = [r for r in summary(alice, acme).rows if r["mig_profile"]]
    assert {(r["resource"], r["gpu_hours"]) for r in rows} == {("mig", None)}
    assert sum(r["mig_instance_hours"] for r in rows) == Decimal("2.0000")


def test_the_daily_chart_stacks_no_mig_instance_hours_onto_gpu_hours():
    day = DAY.date()
    chart = charts.daily_by_class(
        [
            {"day": day, "gpu_class": "H100-80GB", "mig_profile": "", "gpu_hours": Decimal(8)},
            {
                "day": day,
                "gpu_class": "A100-80GB",
                "mig_profile": "mig-1g.10gb",
                "gpu_hours": None,
                "mig_instance_hours": Decimal(2),
            },
        ]
    )
    assert [segment.label for segment in chart.segments] == ["H100-80GB"]


def test_the_spend_that_budgets_count_is_the_invoices(half_cents, acme):
    spent = selectors.spend(organization=acme, at=clock.now())
    assert (spent, draft(acme).subtotal) == (Decimal("1.46"), Decimal("1.46"))
