"""The webhooks API's lists lock their query count: no N+1."""

import pytest

from tenants.permissions import Caller
from webhooks import services
from webhooks.models import Delivery, EventType

from ...queries import assert_list_queries

pytestmark = pytest.mark.django_db

WEBHOOKS = "/api/v1/organizations/acme/webhooks/"


def _endpoint(alice, acme, n: int):
    endpoint, _ = services.endpoint_create(
        caller=Caller(user=alice),
        organization=acme,
        url=f"https://1.1.1.{n % 200 + 1}/hook",
        event_types=[EventType.INVOICE_ISSUED],
    )
    return endpoint


def test_the_endpoints_list_takes_the_same_queries_for_many(alice, acme, api_as):
    made = []

    def add(count: int) -> None:
        for _ in range(count):
            made.append(_endpoint(alice, acme, len(made)))

    assert_list_queries(api_as(alice), WEBHOOKS, add_rows=add, queries=5)


def test_the_deliveries_list_takes_the_same_queries_for_many(alice, acme, api_as):
    endpoint = _endpoint(alice, acme, 0)

    def add(count: int) -> None:
        for n in range(count):
            Delivery.objects.create(
                endpoint=endpoint,
                event_type=EventType.INVOICE_ISSUED,
                event_id="0" * 32,
                object_id=f"{Delivery.objects.count()}-{n}",
                body="{}",
            )

    url = f"{WEBHOOKS}{endpoint.pk}/deliveries/"
    assert_list_queries(api_as(alice), url, add_rows=add, queries=7)
