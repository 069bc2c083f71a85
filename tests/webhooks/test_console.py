"""The console's webhook pages, under the organization's settings: owners and admins register
an endpoint and see its secret once, pause it, delete it and redeliver; nobody else gets in."""

import pytest

from webhooks.models import Endpoint

from ..roles import CONSOLE_MANAGERS_READ
from .conftest import failed_delivery

pytestmark = pytest.mark.django_db

URL = "/orgs/acme/settings/webhooks/"
FORM = {"url": "https://1.1.1.1/hook", "event_types": ["invoice.issued", "order.decided"]}


@pytest.mark.parametrize(("caller", "status"), CONSOLE_MANAGERS_READ)
def test_owners_and_admins_see_the_webhooks_page_and_nobody_else(
    acme, actors, client, caller, status
):
    if caller != "anonymous":
        client.force_login(actors[caller])
    assert client.get(URL).status_code == status


@pytest.mark.parametrize(("caller", "status"), CONSOLE_MANAGERS_READ)
def test_owners_and_admins_see_an_endpoints_deliveries_and_nobody_else(
    endpoint, actors, client, caller, status
):
    if caller != "anonymous":
        client.force_login(actors[caller])
    assert client.get(f"{URL}{endpoint.pk}/").status_code == status


def test_an_owner_registers_an_endpoint_and_sees_its_secret_once(acme, alice, client):
    client.force_login(alice)
    page = client.post(URL, FORM, follow=True).content.decode()
    endpoint = Endpoint.objects.get(organization=acme)
    again = client.get(f"{URL}{endpoint.pk}/").content.decode()
    assert (endpoint.secret in page, endpoint.secret in again) == (True, False)
    assert endpoint.event_types == ["invoice.issued", "order.decided"]


def test_a_private_url_is_refused_on_the_form(acme, alice, client):
    client.force_login(alice)
    page = client.post(URL, {**FORM, "url": "http://10.1.2.3/hook"}).content.decode()
    assert ("private, loopback" in page, Endpoint.objects.count()) == (True, 0)


def test_an_admin_pauses_and_deletes_an_endpoint(endpoint, adam, client):
    client.force_login(adam)
    client.post(f"{URL}{endpoint.pk}/pause/")
    endpoint.refresh_from_db()
    paused = endpoint.is_active
    client.post(f"{URL}{endpoint.pk}/delete/")
    assert (paused, Endpoint.objects.filter(pk=endpoint.pk).exists()) == (False, False)


def test_a_member_cannot_delete_an_endpoint(endpoint, mia, client):
    client.force_login(mia)
    assert client.post(f"{URL}{endpoint.pk}/delete/").status_code == 403


def test_an_owner_redelivers_a_failed_delivery(endpoint, alice, client):
    delivery = failed_delivery(endpoint)
    client.force_login(alice)
    client.post(f"{URL}{endpoint.pk}/deliveries/{delivery.pk}/redeliver/")
    delivery.refresh_from_db()
    assert delivery.state == "redelivering"


def test_the_organization_page_links_owners_to_webhooks(acme, alice, client):
    client.force_login(alice)
    assert URL in client.get("/orgs/acme/").content.decode()
