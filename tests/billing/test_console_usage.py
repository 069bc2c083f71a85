"""The console's usage page: a month's GPU-hours and cost by day (stacked by class), by class
and by project, for owners and admins, with a CSV download."""

import csv
import io
from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse

from billing import charts, services

from ..roles import CONSOLE_MANAGERS_READ
from .conftest import DAY, cancelled_h100_reservation, ran

pytestmark = pytest.mark.django_db

URL = "/orgs/acme/usage/"
MONTH = f"{DAY + timedelta(hours=1):%Y-%m}"


@pytest.fixture
def used(on_demand, vision):
    """Two hours of 8 H100s in project vision, rated."""
    ran(vision, start=1, end=3)
    services.usage_meter(now=DAY + timedelta(days=1))


def page(client, user, query: str = f"?month={MONTH}") -> str:
    client.force_login(user)
    response = client.get(URL + query)
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.parametrize(("caller", "status"), CONSOLE_MANAGERS_READ)
def test_owners_and_admins_see_the_usage_page_and_nobody_else(used, actors, client, caller, status):
    if caller != "anonymous":
        client.force_login(actors[caller])
    assert client.get(URL).status_code == status


def test_the_page_shows_the_months_gpu_hours_by_class(used, alice, client):
    assert "<tr><td>H100-80GB</td><td>16.0000</td>" in page(client, alice)


def test_the_page_shows_the_months_gpu_hours_by_project(used, alice, client):
    assert "<tr><td>vision</td><td>16.0000</td>" in page(client, alice)


def test_the_daily_chart_has_a_segment_per_day_and_class(used, alice, client):
    assert page(client, alice).count("</rect>") == 1


def test_another_month_shows_none_of_this_ones_use(used, alice, client):
    earlier = f"{DAY - timedelta(days=40):%Y-%m}"
    assert "No rated use in this month." in page(client, alice, f"?month={earlier}")


def test_an_unreadable_month_is_explained_and_this_month_shown(used, alice, client):
    assert "A month is written YYYY-MM" in page(client, alice, "?month=2026-13")


def test_the_months_rows_download_as_csv(used, alice, client):
    client.force_login(alice)
    response = client.get(f"{URL}?month={MONTH}&format=csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [(row["gpu_class"], row["project"], row["gpu_hours"]) for row in rows] == [
        ("H100-80GB", "vision", "16.0000")
    ]


def row(day: int, gpu_class: str, hours: str, mig_profile: str = "", project: str = "p"):
    return {
        "day": DAY.date() + timedelta(days=day),
        "gpu_class": gpu_class,
        "mig_profile": mig_profile,
        "project": project,
        "gpu_hours": Decimal(hours),
        "cost": Decimal(hours) * 2,
    }


def test_a_day_stacks_its_classes_the_largest_at_the_bottom():
    chart = charts.daily_by_class([row(0, "A100-80GB", "2"), row(0, "H100-80GB", "6")])
    bottom, top = chart.segments
    assert (bottom.label, bottom.y + bottom.height, top.y + top.height) == (
        "H100-80GB",
        charts.HEIGHT,
        bottom.y,
    )


def test_the_busiest_day_fills_the_chart_height():
    chart = charts.daily_by_class([row(0, "H100-80GB", "3"), row(1, "H100-80GB", "6")])
    assert [segment.height for segment in chart.segments] == [charts.HEIGHT // 2, charts.HEIGHT]


def test_a_mig_profile_is_a_class_of_its_own_in_the_legend():
    chart = charts.daily_by_class([row(0, "A100-80GB", "1", "1g.10gb"), row(0, "A100-80GB", "2")])
    assert [label for label, _ in chart.legend] == ["A100-80GB", "A100-80GB 1g.10gb"]


def test_no_use_draws_no_chart():
    assert charts.daily_by_class([]) is None


def test_shares_sum_each_label_largest_first():
    shares = charts.shares(
        [row(0, "A", "1", project="x"), row(1, "A", "1", project="y"), row(0, "B", "4")],
        by=lambda usage: usage["project"],
    )
    assert [(share.label, share.gpu_hours, share.percent) for share in shares] == [
        ("p", Decimal(4), 100),
        ("x", Decimal(1), 25),
        ("y", Decimal(1), 25),
    ]


@pytest.mark.parametrize(
    ("month", "said"),
    [
        ("9999-99", "A month is written YYYY-MM"),
        ("2026-1", "A month is written YYYY-MM"),
        ("<script>", "A month is written YYYY-MM"),
        ("2026-11'; --", "A month is written YYYY-MM"),
        ("0000-01", "A month from 2000 to 9998."),
        ("9999-12", "A month from 2000 to 9998."),
    ],
)
def test_a_hostile_month_is_explained_and_this_month_shown(used, alice, client, month, said):
    client.force_login(alice)
    response = client.get(URL, {"month": month})
    assert (response.status_code, said in response.content.decode()) == (200, True)


@pytest.mark.usefixtures("mid_month")
def test_the_usage_page_shows_the_month_to_date_in_cents(on_demand, alice, acme, client):
    cancelled_h100_reservation(alice, acme)
    client.force_login(alice)
    page = client.get(reverse("billing:usage", args=["acme"])).content.decode()
    assert "19.72 EUR spent so far" in page


PAGE = "/orgs/acme/usage/"


def test_the_usage_page_says_gpu_hours_and_mig_instance_hours_apart(mixed, alice, client):
    client.force_login(alice)
    page = client.get(PAGE).content.decode()
    assert (
        "<strong>8.0000 GPU-hours</strong>, <strong>2.0000 A100-80GB mig-1g.10gb"
        " instance-hours</strong>"
    ) in page


def test_the_usage_page_shows_a_mig_profiles_use_in_its_own_column(mixed, alice, client):
    client.force_login(alice)
    page = client.get(PAGE).content.decode()
    assert "<tr><td>A100-80GB mig-1g.10gb</td><td>—</td><td>2.0000</td>" in page


def test_the_usage_csv_has_mig_instance_hours_in_their_own_column(mixed, alice, client):
    client.force_login(alice)
    response = client.get(f"{PAGE}?format=csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    mig = [(r["gpu_hours"], r["mig_instance_hours"]) for r in rows if r["mig_profile"]]
    assert {gpu_hours for gpu_hours, _ in mig} == {""}
    assert sum(Decimal(hours) for _, hours in mig) == 2
