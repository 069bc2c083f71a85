"""The usage API: GPU-hours and cost by day, class, tier and project, the month to date (the
draft invoice's subtotal to the cent) and its forecast, for owners and admins; a malformed
period, or one that starts after it ends, is a 400 naming the field."""

from datetime import timedelta
from decimal import Decimal

import pytest

from portal import clock

from ..conftest import cancelled_h100_reservation, draft, spent_today

pytestmark = pytest.mark.django_db

USAGE = "/api/v1/organizations/acme/usage/"


def test_a_period_ending_before_it_starts_is_a_400_naming_the_end(acme, alice, api_as):
    answer = api_as(alice).get(USAGE, {"start": "2026-11-20", "end": "2026-11-10"})
    assert (answer.status_code, list(answer.json()["error"]["fields"])) == (400, ["end"])


def test_a_start_after_this_months_end_is_a_400_naming_the_start(acme, alice, api_as):
    later = (clock.now() + timedelta(days=40)).date()
    answer = api_as(alice).get(USAGE, {"start": later.isoformat()})
    assert (answer.status_code, list(answer.json()["error"]["fields"])) == (400, ["start"])


@pytest.mark.usefixtures("mid_month")
def test_usage_answers_gpu_hours_and_cost_by_day_class_tier_and_project(
    on_demand, alice, vision, api_as
):
    spent_today(vision, 2)
    usage = api_as(alice).get(USAGE).json()
    # Two hours before now may straddle midnight: a row a day, of the same class and project.
    assert (
        {(r["project"], r["gpu_class"], r["tier"]) for r in usage["rows"]},
        usage["gpu_hours"],
        usage["cost"],
    ) == ({("vision", "H100-80GB", "training")}, "16.0000", "46.40")


@pytest.mark.usefixtures("mid_month")
def test_usage_forecasts_the_month_from_the_run_rate(on_demand, alice, vision, api_as):
    spent_today(vision, 1)
    usage = api_as(alice).get(USAGE).json()
    assert Decimal(usage["forecast"]) >= Decimal(usage["month_to_date"]) == Decimal("23.20")


@pytest.mark.parametrize("params", [{"start": ""}, {"end": "2026-13-01"}])
def test_a_blank_or_malformed_usage_date_is_a_400_naming_it(alice, api_as, params):
    response = api_as(alice).get(USAGE, params)
    assert (response.status_code, set(response.json()["error"]["fields"])) == (400, set(params))


def test_a_usage_period_ending_before_it_starts_is_a_400(alice, api_as):
    response = api_as(alice).get(USAGE, {"start": "2026-12-10", "end": "2026-12-01"})
    assert response.status_code == 400


def test_a_member_gets_no_usage(mia, api_as):
    assert api_as(mia).get(USAGE).status_code == 403


@pytest.mark.usefixtures("mid_month")
def test_a_one_off_charge_is_forecast_once_not_at_the_run_rate(on_demand, alice, acme, api_as):
    cancelled_h100_reservation(alice, acme)
    usage = api_as(alice).get(USAGE).json()
    assert (usage["month_to_date"], usage["forecast"]) == ("19.72", "19.72")


def test_the_api_names_gpu_hours_and_mig_instance_hours_apart(mixed, alice, api_as):
    usage = api_as(alice).get(USAGE).json()
    assert (usage["gpu_hours"], usage["totals"][0]) == (
        "8.0000",
        {
            "gpu_class": "A100-80GB",
            "mig_profile": "mig-1g.10gb",
            "resource": "mig",
            "gpu_hours": None,
            "mig_instance_hours": "2.0000",
            "cost": "0.00",
        },
    )


def test_the_usage_apis_month_to_date_is_the_draft_subtotal_to_the_cent(
    half_cents, acme, alice, api_as
):
    usage = api_as(alice).get(USAGE).json()
    assert (usage["month_to_date"], str(draft(acme).subtotal)) == ("1.46", "1.46")


def test_the_usage_apis_total_cost_is_rounded_per_invoice_line(half_cents, acme, alice, api_as):
    assert api_as(alice).get(USAGE).json()["cost"] == "1.46"
