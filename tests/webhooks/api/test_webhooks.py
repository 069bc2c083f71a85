"""The webhooks API: owners and admins register, change and delete endpoints and read their
deliveries; members and viewers get 403 (an endpoint's URL and what it is sent are the
managers'), another tenant 404. The secret is shown once. Bad input is a 400 naming its
field."""

import pytest

from webhooks.models import Delivery

from ...roles import MANAGERS_READ, MANAGING
from ..conftest import failed_delivery

pytestmark = pytest.mark.django_db

WEBHOOKS = "/api/v1/organizations/acme/webhooks/"
PUBLIC = "https://1.1.1.1/hooks/portal"
VALID = {"url": PUBLIC, "event_types": ["invoice.issued"]}


@pytest.fixture
def delivery(endpoint):
    return failed_delivery(endpoint, attempts=7, last_status_code=500, last_response_body="down")


@pytest.mark.parametrize(("caller", "status"), MANAGING)
def test_owners_and_admins_register_endpoints_and_no_one_else(actors, api_as, caller, status):
    response = api_as(actors.get(caller)).post(WEBHOOKS, VALID, format="json")
    assert response.status_code == status


@pytest.mark.parametrize(("caller", "status"), MANAGERS_READ)
def test_owners_and_admins_list_endpoints_and_no_one_else(actors, api_as, endpoint, caller, status):
    assert api_as(actors.get(caller)).get(WEBHOOKS).status_code == status


@pytest.mark.parametrize(("caller", "status"), MANAGERS_READ)
def test_owners_and_admins_list_deliveries_and_no_one_else(
    actors, api_as, endpoint, caller, status
):
    url = f"{WEBHOOKS}{endpoint.pk}/deliveries/"
    assert api_as(actors.get(caller)).get(url).status_code == status


@pytest.mark.parametrize(
    ("caller", "status"), [(c, 202 if s == 200 else s) for c, s in MANAGERS_READ]
)
def test_owners_and_admins_redeliver_and_no_one_else(actors, api_as, delivery, caller, status):
    url = f"{WEBHOOKS}{delivery.endpoint_id}/deliveries/{delivery.pk}/redeliver/"
    assert api_as(actors.get(caller)).post(url).status_code == status


def test_the_secret_is_shown_once_when_the_endpoint_is_created(alice, api_as):
    created = api_as(alice).post(WEBHOOKS, VALID, format="json").json()
    shown = api_as(alice).get(f"{WEBHOOKS}{created['id']}/").json()
    assert created["secret"].startswith("whsec_")
    assert ("secret" in shown, shown["secret_hint"]) == (False, created["secret"][:10] + "…")


def test_a_secret_given_is_the_one_used(alice, api_as):
    body = {**VALID, "secret": "my-own-secret-of-32-characters!!"}
    created = api_as(alice).post(WEBHOOKS, body, format="json").json()
    assert created["secret"] == "my-own-secret-of-32-characters!!"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**VALID, "url": "ftp://1.1.1.1/x"}, "url"),
        ({**VALID, "url": "not a url"}, "url"),
        ({**VALID, "url": "http://127.0.0.1:8000/hook"}, "url"),
        ({**VALID, "url": "http://10.0.0.5/hook"}, "url"),
        ({**VALID, "url": "http://169.254.169.254/latest/meta-data/"}, "url"),
        ({**VALID, "url": "http://[::1]/hook"}, "url"),
        ({**VALID, "url": "http://224.0.0.1/hook"}, "url"),
        ({**VALID, "url": "http://localhost/hook"}, "url"),
        ({**VALID, "event_types": []}, "event_types"),
        ({**VALID, "event_types": ["invoice.paid"]}, "event_types.0"),
        ({**VALID, "event_types": "invoice.issued"}, "event_types"),
        ({**VALID, "secret": "short"}, "secret"),
        ({**VALID, "secret": "sixteen chars with spaces"}, "secret"),
        ({**VALID, "is_active": "maybe"}, "is_active"),
        ({**VALID, "colour": "red"}, "colour"),
        ({"event_types": ["invoice.issued"]}, "url"),
    ],
)
def test_bad_endpoint_input_is_a_400_naming_the_field(alice, api_as, body, field):
    response = api_as(alice).post(WEBHOOKS, body, format="json")
    assert (response.status_code, field in response.json()["error"]["fields"]) == (400, True)


def test_a_private_address_is_accepted_when_the_operator_allows_it(alice, api_as, settings):
    settings.PORTAL_WEBHOOKS_ALLOW_PRIVATE = True
    body = {**VALID, "url": "http://127.0.0.1:8000/hook"}
    assert api_as(alice).post(WEBHOOKS, body, format="json").status_code == 201


def test_an_endpoint_is_paused_and_its_types_changed(alice, api_as, endpoint):
    url = f"{WEBHOOKS}{endpoint.pk}/"
    body = {"is_active": False, "event_types": ["order.decided", "invoice.issued"]}
    changed = api_as(alice).patch(url, body, format="json").json()
    assert (changed["is_active"], changed["event_types"]) == (
        False,
        ["invoice.issued", "order.decided"],
    )


def test_a_change_to_a_refused_url_is_a_400(alice, api_as, endpoint):
    url = f"{WEBHOOKS}{endpoint.pk}/"
    response = api_as(alice).patch(url, {"url": "http://192.168.1.1/"}, format="json")
    assert (response.status_code, list(response.json()["error"]["fields"])) == (400, ["url"])


def test_another_tenants_endpoint_is_a_404_to_read_change_and_delete(bruno, api_as, endpoint):
    url = f"/api/v1/organizations/globex/webhooks/{endpoint.pk}/"
    client = api_as(bruno)
    answers = (
        client.get(url).status_code,
        client.patch(url, {"is_active": False}, format="json").status_code,
        client.delete(url).status_code,
        client.get(f"{url}deliveries/").status_code,
    )
    assert answers == (404, 404, 404, 404)


def test_another_tenants_delivery_is_a_404_to_redeliver(bruno, api_as, delivery):
    url = (
        f"/api/v1/organizations/globex/webhooks/{delivery.endpoint_id}"
        f"/deliveries/{delivery.pk}/redeliver/"
    )
    assert api_as(bruno).post(url).status_code == 404


def test_an_endpoint_is_deleted(alice, api_as, endpoint):
    url = f"{WEBHOOKS}{endpoint.pk}/"
    answers = (api_as(alice).delete(url).status_code, api_as(alice).get(url).status_code)
    assert answers == (204, 404)


def test_deliveries_are_listed_with_state_attempts_and_the_last_answer(alice, api_as, delivery):
    [listed] = api_as(alice).get(f"{WEBHOOKS}{delivery.endpoint_id}/deliveries/").json()["results"]
    assert (
        listed["id"],
        listed["state"],
        listed["attempts"],
        listed["last_status_code"],
        listed["last_response_body"],
    ) == (str(delivery.pk), "failed", 7, 500, "down")


def test_deliveries_are_filtered_by_state(alice, api_as, delivery):
    url = f"{WEBHOOKS}{delivery.endpoint_id}/deliveries/?state=delivered"
    assert api_as(alice).get(url).json()["results"] == []


def test_a_redelivery_is_accepted_and_waits_for_the_worker(alice, api_as, delivery):
    url = f"{WEBHOOKS}{delivery.endpoint_id}/deliveries/{delivery.pk}/redeliver/"
    response = api_as(alice).post(url)
    assert (response.status_code, response.json()["state"]) == (202, "redelivering")


def test_a_delivery_waiting_for_an_attempt_is_a_409_to_redeliver(alice, api_as, delivery):
    Delivery.objects.filter(pk=delivery.pk).update(state=Delivery.State.PENDING)
    url = f"{WEBHOOKS}{delivery.endpoint_id}/deliveries/{delivery.pk}/redeliver/"
    response = api_as(alice).post(url)
    assert (response.status_code, response.json()["error"]["code"]) == (409, "delivery_waiting")


def test_a_read_only_token_of_an_owner_lists_but_does_not_register(alice, acme, token_for):
    _, client = token_for(alice, acme, scope="read")
    answers = (
        client.get(WEBHOOKS).status_code,
        client.post(WEBHOOKS, VALID, format="json").status_code,
    )
    assert answers == (200, 403)
