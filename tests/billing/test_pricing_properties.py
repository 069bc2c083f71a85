"""The price rules of ``billing.pricing`` are written in Python (over versions already read) and
as queries (the selectors, the catalog's subqueries) and in the rating statement of
``rating_sql``: on random price histories and catalogs, every form gives the same answer."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from billing import pricing, selectors, services
from billing.models import BillingRecord, CatalogItem, PriceVersion, UsageInterval
from billing.services import rating, rating_sql
from scheduling.models import GpuClass, Placement, PriorityTier, Workload
from tenants.permissions import Caller

from .conftest import DAY, at, ran
from .test_services_rating_sql import rated_records

pytestmark = pytest.mark.django_db

EXAMPLES = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# A version: whose (the list's, acme's own, globex's own), from which half hour around DAY, at
# what price.
version = st.tuples(
    st.sampled_from(["list", "acme", "globex"]),
    st.integers(min_value=-8, max_value=8),
    st.integers(min_value=0, max_value=999_999),
)
history = st.lists(version, max_size=7, unique_by=lambda v: (v[0], v[1]))
moment = st.integers(min_value=-10, max_value=10).map(lambda n: at(n / 2))


def versions_saved(item, versions, owners) -> list[PriceVersion]:
    PriceVersion.objects.filter(item=item).delete()
    return [
        PriceVersion.objects.create(
            item=item,
            organization=owners[whose],
            unit_price=Decimal(price) / 10_000,
            effective_from=at(half_hours / 2),
        )
        for whose, half_hours, price in versions
    ]


@pytest.fixture
def owners(acme, globex):
    return {"list": None, "acme": acme, "globex": globex}


@EXAMPLES
@given(versions=history, when=moment, whose=st.sampled_from(["list", "acme"]))
def test_the_price_in_force_is_the_rules_on_the_database(on_demand, owners, versions, when, whose):
    saved = versions_saved(on_demand, versions, owners)
    organization = owners[whose]
    expected = pricing.version_in_force(saved, organization and organization.pk, when)
    found = selectors.price_in_force(item=on_demand, at=when, organization=organization)
    assert found == expected


@EXAMPLES
@given(versions=history, when=moment)
def test_the_catalogs_prices_are_the_rules_on_the_database(
    on_demand, owners, alice, acme, versions, when
):
    saved = versions_saved(on_demand, versions, owners)
    in_force = pricing.version_in_force(saved, acme.pk, when)
    upcoming = pricing.version_next(saved, acme.pk, when)
    item = (
        selectors.catalog_for(caller=Caller(user=alice), organization=acme, at=when)
        .filter(pk=on_demand.pk)
        .get()
    )
    assert (item.unit_price, item.price_from, item.next_price, item.next_price_from) == (
        in_force and in_force.unit_price,
        in_force and in_force.effective_from,
        upcoming and upcoming.unit_price,
        upcoming and upcoming.effective_from,
    )


# An on-demand item: for which tier (None: every tier), offered to whom, active from and
# until which hour around DAY (None: for good).
item = st.fixed_dictionaries(
    {
        "tier": st.sampled_from([None, "training", "batch"]),
        "offered": st.sampled_from(["public", "acme", "globex"]),
        "active_from": st.integers(min_value=-2, max_value=2),
        "active_for": st.one_of(st.none(), st.integers(min_value=1, max_value=4)),
    }
)
use = st.tuples(st.integers(min_value=-1, max_value=3), st.sampled_from(["training", "batch"]))


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the SQL rating runs on PostgreSQL only"
)
@EXAMPLES
@given(
    items=st.lists(item, min_size=2, max_size=4),
    slugs=st.permutations(range(4)),
    uses=st.lists(use, min_size=1, max_size=3),
    versions=history,
)
def test_rating_in_sql_takes_the_item_and_price_the_rules_give(
    cluster, owners, operator, vision, items, slugs, uses, versions
):
    BillingRecord.objects.all().delete()
    UsageInterval.objects.all().delete()
    Placement.objects.all().delete()
    Workload.objects.all().delete()
    CatalogItem.objects.all().delete()
    h100 = GpuClass.objects.get(name="H100-80GB")
    made = []
    for n, fields in enumerate(items):
        made.append(
            CatalogItem.objects.create(
                slug=f"item-{slugs[n]}",
                name=f"item {n}",
                kind=CatalogItem.Kind.ON_DEMAND,
                gpu_class=h100,
                tier=fields["tier"] and PriorityTier.objects.get(name=fields["tier"]),
                public=fields["offered"] == "public",
                active_from=at(fields["active_from"]),
                active_until=None
                if fields["active_for"] is None
                else at(fields["active_from"] + fields["active_for"]),
            )
        )
        if fields["offered"] != "public":
            made[-1].organizations.add(owners[fields["offered"]])
        versions_saved(made[-1], [("list", -9, 10_000 * (n + 1)), *versions], owners)
    for n, (start, tier) in enumerate(uses):
        ran(vision, start=start, end=start + 1.5, tier=tier, name=f"w{n}", gpus=1)
    services.usage_intervals_sync()
    horizon = DAY + timedelta(hours=6)
    in_sql = rated_records(rating_sql.intervals_rate, horizon)
    in_python = rated_records(rating._intervals_rate, horizon)
    assert in_sql == in_python
