"""The cancellation charge API: a quote before cancelling, the charge recorded after, and
the organization's list of charges; owners and admins read them, another tenant gets a 404."""

import pytest

from billing import services
from billing.models import CancellationCharge
from scheduling import services as scheduling
from tenants.permissions import Caller

from ...roles import MANAGERS_READ
from ..conftest import cancelled, reservation

pytestmark = pytest.mark.django_db

URL = "/api/v1/organizations/acme/reservations/{}/cancellation-charge/"

LIST = "/api/v1/organizations/acme/cancellation-charges/"


def test_the_api_quotes_what_cancelling_would_cost_now(reserved, alice, acme, api_as):
    held = reservation(alice, acme, starts_in=10)
    quote = api_as(alice).get(URL.format(held.pk)).json()
    assert (quote["amount"], quote["currency"], quote["recorded"]) == ("39.44", "EUR", False)


def test_the_api_answers_a_recorded_charge_as_recorded(reserved, alice, acme, api_as):
    held = cancelled(alice, reservation(alice, acme, starts_in=10))
    services.cancellation_charge_record(reservation_id=str(held.pk))
    charge = api_as(alice).get(URL.format(held.pk)).json()
    assert (charge["amount"], charge["recorded"]) == ("39.44", True)


def test_a_reservation_that_holds_nothing_has_nothing_to_quote(
    reserved, alice, acme, operator, api_as
):
    held = reservation(alice, acme, starts_in=10)
    scheduling.reservation_reject(caller=Caller(user=operator), reservation=held, reason="no")
    response = api_as(alice).get(URL.format(held.pk))
    assert (response.status_code, response.json()["error"]["code"]) == (409, "not_holding")


@pytest.mark.parametrize(("caller", "status"), MANAGERS_READ)
def test_owners_and_admins_read_the_quote_and_others_get_nothing(
    reserved, alice, acme, actors, api_as, caller, status
):
    held = reservation(alice, acme, starts_in=10)
    assert api_as(actors.get(caller)).get(URL.format(held.pk)).status_code == status


@pytest.mark.parametrize("reservation_id", ["not-a-uuid", "00000000-0000-0000-0000-000000000000"])
def test_an_unknown_or_malformed_reservation_is_a_404(reserved, alice, api_as, reservation_id):
    assert api_as(alice).get(URL.format(reservation_id)).status_code == 404


def test_another_tenants_reservation_is_a_404(reserved, alice, acme, bruno, api_as):
    held = reservation(alice, acme, starts_in=10)
    url = f"/api/v1/organizations/globex/reservations/{held.pk}/cancellation-charge/"
    assert api_as(bruno).get(url).status_code == 404


def test_the_list_holds_the_organizations_charges_only(
    reserved, alice, acme, globex, bruno, api_as
):
    for user, organization in ((alice, acme), (bruno, globex)):
        held = cancelled(user, reservation(user, organization, starts_in=10))
        services.cancellation_charge_record(reservation_id=str(held.pk))
    listed = api_as(alice).get(LIST).json()["results"]
    assert [c["reservation"] for c in listed] == [
        str(CancellationCharge.objects.get(organization=acme).reservation_id)
    ]
