"""Showback: an organization's owners and admins see their GPU-hours of each pool and their share
of idle, under the operator's rule, and what they cost the operator where it shows costs; only
where the operator offers it to their organization; never another organization's."""

from decimal import Decimal

import pytest

from billing import services
from portal import clock
from scheduling.models import NodePool
from tenants.permissions import Caller

from ...roles import MANAGERS_READ
from ..conftest import at, guaranteed, ran

pytestmark = pytest.mark.django_db


def url(organization="acme") -> str:
    now = clock.now()
    return f"/api/v1/organizations/{organization}/showback/{now.year}/{now.month}/"


def shown(organization, operator, level: str) -> None:
    services.showback_level_set(
        caller=Caller(user=operator), organization=organization, level=level
    )


@pytest.fixture
def offered(settings, acme, operator):
    """acme is shown its showback with costs."""
    shown(acme, operator, "cost")
    return settings


@pytest.fixture
def hours_only(acme, operator):
    """acme is shown its showback in GPU-hours only."""
    shown(acme, operator, "hours")


@pytest.fixture
def costed(cluster, operator):
    """dgx-h100's GPU-hour costs 1.14 and its node-hour 0.80 more, from now."""
    services.cost_model_add(
        caller=Caller(user=operator),
        pool=NodePool.objects.get(name="dgx-h100"),
        purchase_price_per_gpu=Decimal("36000.00"),
        lifetime_months=50,
        nameplate_watts=700,
        price_per_kwh=Decimal("0.2000"),
        overhead_per_node_hour=Decimal("0.8000"),
    )


@pytest.mark.parametrize(("caller", "status"), MANAGERS_READ)
def test_owners_and_admins_see_their_showback_and_nobody_else(
    offered, costed, actors, api_as, caller, status
):
    assert api_as(actors.get(caller)).get(url()).status_code == status


@pytest.mark.parametrize(("caller", "status"), MANAGERS_READ)
def test_owners_and_admins_see_their_showback_in_hours_and_nobody_else(
    hours_only, costed, actors, api_as, caller, status
):
    assert api_as(actors.get(caller)).get(url()).status_code == status


def test_another_organizations_showback_is_a_404(offered, costed, globex, operator, actors, api_as):
    shown(globex, operator, "cost")
    assert api_as(actors["owner"]).get(url("globex")).status_code == 404


def test_without_the_operators_offer_showback_is_a_404(costed, actors, api_as):
    assert api_as(actors["owner"]).get(url()).status_code == 404


def test_showback_turned_off_for_the_organization_is_a_404(
    costed, acme, operator, settings, actors, api_as
):
    settings.PORTAL_BOOKS_SHOWBACK = "cost"
    shown(acme, operator, "off")
    assert api_as(actors["owner"]).get(url()).status_code == 404


def test_the_portals_default_offers_showback_to_an_organization_without_a_setting(
    costed, settings, actors, api_as
):
    settings.PORTAL_BOOKS_SHOWBACK = "hours"
    assert api_as(actors["owner"]).get(url()).status_code == 200


def test_a_month_that_does_not_exist_is_a_404(offered, actors, api_as):
    assert (
        api_as(actors["owner"]).get("/api/v1/organizations/acme/showback/2026/0/").status_code
        == 404
    )


def _h100(response) -> dict:
    return next(row for row in response.json() if row["pool"] == "dgx-h100")


def test_idle_kept_apart_is_nobodys(offered, costed, acme, actors, api_as):
    offered.PORTAL_BOOKS_IDLE_SHARING = "apart"
    assert _h100(api_as(actors["owner"]).get(url()))["idle_cost"] == "0.00"


def test_idle_shared_to_guarantees_falls_on_who_held_capacity_unused(
    offered, costed, acme, h100, actors, api_as
):
    offered.PORTAL_BOOKS_IDLE_SHARING = "guarantees"
    guaranteed(acme, h100, 8, since=at(-24 * 62))
    row = _h100(api_as(actors["owner"]).get(url()))
    assert Decimal(row["idle_cost"]) > 0
    assert row["used_hours"] == "0.000000000000"


def test_idle_shared_by_usage_goes_to_those_who_used_the_pool(
    offered, costed, acme, globex, vision, actors, api_as
):
    offered.PORTAL_BOOKS_IDLE_SHARING = "usage"
    ran(vision, start=-24, end=None, gpus=8)
    services.usage_meter(now=clock.now())
    row = _h100(api_as(actors["owner"]).get(url()))
    assert Decimal(row["used_hours"]) > 0
    assert Decimal(row["idle_cost"]) > 0


def test_in_hours_only_the_costs_are_left_out(hours_only, costed, acme, h100, actors, api_as):
    guaranteed(acme, h100, 8, since=at(-24 * 62))
    row = _h100(api_as(actors["owner"]).get(url()))
    assert (row["usage_cost"], row["idle_cost"], row["total"]) == (None, None, None)


def test_in_hours_only_the_share_of_idle_is_in_gpu_hours(
    hours_only, costed, acme, h100, settings, actors, api_as
):
    settings.PORTAL_BOOKS_IDLE_SHARING = "guarantees"
    guaranteed(acme, h100, 8, since=at(-24 * 62))
    assert Decimal(_h100(api_as(actors["owner"]).get(url()))["idle_hours"]) > 0


def test_with_costs_the_share_of_idle_has_its_cost(offered, costed, acme, h100, actors, api_as):
    offered.PORTAL_BOOKS_IDLE_SHARING = "guarantees"
    guaranteed(acme, h100, 8, since=at(-24 * 62))
    row = _h100(api_as(actors["owner"]).get(url()))
    assert Decimal(row["idle_hours"]) > 0
    assert Decimal(row["total"]) == Decimal(row["usage_cost"]) + Decimal(row["idle_cost"]) > 0
