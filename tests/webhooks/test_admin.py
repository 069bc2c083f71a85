"""Operators see every organization's endpoints and deliveries with their attempts in admin,
never an endpoint's secret."""

import pytest

from webhooks.models import Attempt

from .conftest import failed_delivery

pytestmark = pytest.mark.django_db


def test_an_operator_sees_an_endpoint_but_not_its_secret(admin_client, endpoint):
    page = admin_client.get(f"/admin/webhooks/endpoint/{endpoint.pk}/change/").content.decode()
    assert (endpoint.url in page, endpoint.secret in page) == (True, False)


def test_an_operator_sees_a_deliverys_attempts(admin_client, endpoint):
    delivery = failed_delivery(endpoint)
    Attempt.objects.create(delivery=delivery, number=1, status_code=502, error="")
    page = admin_client.get(f"/admin/webhooks/delivery/{delivery.pk}/change/").content.decode()
    assert "502" in page
