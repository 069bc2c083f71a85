"""What scheduling learns of prices: it asks ``ExtensionPoint.USAGE_PRICES`` (billing answers
with its pricing rule) and multiplies (``scheduling.selectors.usage_prices``)."""

from datetime import timedelta
from decimal import Decimal

import pytest

from billing import services
from portal import clock
from scheduling import selectors as scheduling_selectors
from scheduling.models import PriorityTier
from tenants.permissions import Caller

pytestmark = pytest.mark.django_db


def prices_of(organization):
    return scheduling_selectors.usage_prices(organization_id=organization.pk, at=clock.now())


@pytest.fixture
def batch_tier(db):
    return PriorityTier.objects.get_or_create(name="batch", defaults={"value": 10})[0]


def test_an_item_for_every_tier_prices_each_tier(on_demand, acme, batch_tier):
    price = prices_of(acme).hourly(gpu_class="H100-80GB", tier="batch")
    assert price == Decimal("2.9")


def test_a_tiers_own_item_prices_it_before_the_item_for_every_tier(
    on_demand, offer, acme, batch_tier
):
    offer(slug="h100-batch", price="1.5000", tier=batch_tier)
    prices = prices_of(acme)
    assert (
        prices.hourly(gpu_class="H100-80GB", tier="batch"),
        prices.hourly(gpu_class="H100-80GB", tier="interactive"),
    ) == (Decimal("1.5"), Decimal("2.9"))


def test_an_organizations_own_price_is_the_one_it_is_told(on_demand, operator, acme):
    services.price_version_add(
        caller=Caller(user=operator), item=on_demand, unit_price=Decimal("2.1"), organization=acme
    )
    assert prices_of(acme).hourly(gpu_class="H100-80GB", tier="batch") == Decimal("2.1")


def test_an_item_offered_to_another_organization_prices_nothing_for_this_one(offer, acme, globex):
    item = offer(slug="h100-globex", public=False)
    item.organizations.add(globex)
    assert (
        prices_of(acme).hourly(gpu_class="H100-80GB", tier="batch"),
        prices_of(globex).hourly(gpu_class="H100-80GB", tier="batch"),
    ) == (None, Decimal("2.9"))


def test_a_mig_profile_has_its_own_price(on_demand, offer, acme):
    offer(slug="h100-1g", price="0.4000", mig_profile="mig-1g.10gb")
    assert prices_of(acme).hourly(
        gpu_class="H100-80GB", mig_profile="mig-1g.10gb", tier="batch"
    ) == Decimal("0.4")


def test_a_price_that_starts_later_is_not_in_force_yet(on_demand, operator, acme):
    services.price_version_add(
        caller=Caller(user=operator),
        item=on_demand,
        unit_price=Decimal("9"),
        effective_from=clock.now() + timedelta(days=1),
    )
    assert prices_of(acme).hourly(gpu_class="H100-80GB", tier="batch") == Decimal("2.9")


def test_cost_is_units_times_hours_times_price_in_cents(on_demand, acme):
    cost = prices_of(acme).cost(
        gpu_class="H100-80GB", tier="batch", units=Decimal(8), span=timedelta(minutes=90)
    )
    # 8 GPUs x 1.5 h x 2.90 = 34.80
    assert cost == Decimal("34.80")


def test_cost_rounds_half_up_to_cents(on_demand, acme):
    cost = prices_of(acme).cost(
        gpu_class="H100-80GB", tier="batch", units=Decimal("0.25"), span=timedelta(seconds=90)
    )
    # 0.25 GPU x 0.025 h x 2.90 = 0.018125
    assert cost == Decimal("0.02")


def test_cost_of_what_nothing_prices_is_none(acme):
    cost = prices_of(acme).cost(
        gpu_class="H100-80GB", tier="batch", units=Decimal(1), span=timedelta(hours=1)
    )
    assert cost is None
