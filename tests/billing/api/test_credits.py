"""The credits API: owners and admins read the grants and the balance left."""

import pytest

from ...roles import MANAGERS_READ
from ..conftest import draft, granted, issue

pytestmark = pytest.mark.django_db

URL = "/api/v1/organizations/acme/credits/"


@pytest.mark.parametrize(
    ("caller", "status"),
    MANAGERS_READ,
)
def test_owners_and_admins_read_the_credit_and_nobody_else(acme, actors, api_as, caller, status):
    assert api_as(actors.get(caller)).get(URL).status_code == status


def test_the_api_answers_the_grants_and_the_balance(used_this_month, acme, operator, alice, api_as):
    granted(acme, operator, "100")
    issue(draft(acme), operator)
    body = api_as(alice).get(URL).json()
    assert (body["balance"], [g["amount"] for g in body["grants"]]) == ("53.60", ["100.00"])
