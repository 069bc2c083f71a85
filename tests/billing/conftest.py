from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings

from billing import services
from billing.models import CatalogItem
from portal import clock
from scheduling import services as scheduling
from scheduling.backends import simulated_backend
from scheduling.models import GpuClass
from tenants.permissions import Caller

from ..factories import ProjectFactory, UserFactory


@pytest.fixture
def operator(db):
    return UserFactory(email="ops@example.com", is_staff=True)


@pytest.fixture
def finance(client):
    """An operator signed in to admin."""
    client.force_login(UserFactory(email="finance@example.com", is_staff=True, is_superuser=True))
    return client


@pytest.fixture
def h100(db):
    scheduling.cluster_description_apply(path=Path(settings.PORTAL_SIMULATED_CLUSTER))
    return GpuClass.objects.get(name="H100-80GB")


@pytest.fixture
def cluster(h100):
    """The demo's simulated nodes, whose GPUs reservations hold."""
    description = Path(settings.PORTAL_SIMULATED_CLUSTER)
    scheduling.inventory_sync(backend=simulated_backend(description_path=description))


@pytest.fixture
def offer(operator, h100):
    """An item of the catalog, priced from now on; keyword arguments override its fields."""

    def make(slug="h100-on-demand", price="2.9000", **fields) -> CatalogItem:
        item = services.catalog_item_save(
            caller=Caller(user=operator),
            item=CatalogItem(
                slug=slug,
                name=fields.pop("name", slug),
                kind=fields.pop("kind", "on_demand"),
                gpu_class=fields.pop("gpu_class", h100),
                active_from=fields.pop("active_from", clock.now() - timedelta(days=1)),
                **fields,
            ),
        )
        services.price_version_add(
            caller=Caller(user=operator),
            item=item,
            unit_price=Decimal(price),
        )
        return item

    return make


@pytest.fixture
def vision(acme):
    """A project of acme's besides the demo's."""
    return ProjectFactory(organization=acme, slug="vision")


@pytest.fixture
def on_demand(offer, cluster):
    """H100 on demand at 2.9000 per GPU-hour, for every tier."""
    return offer(slug="h100-on-demand", kind="on_demand", price="2.9000")


@pytest.fixture
def reserved_item(offer, cluster):
    """Reserved H100-hours at 2.4650."""
    return offer(slug="h100-reserved", kind="reservation", price="2.4650")
