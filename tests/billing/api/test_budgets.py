"""The budgets API: owners and admins set a budget and read what it spent, a malformed
budget is a 400 naming its field, another tenant's budget a 404."""

import pytest

from ...roles import MANAGERS_READ
from ..conftest import budget, spent_today

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("mid_month")]

BUDGETS = "/api/v1/organizations/acme/budgets/"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"monthly_amount": "0"}, "monthly_amount"),
        ({"monthly_amount": "-5"}, "monthly_amount"),
        ({"monthly_amount": "abc"}, "monthly_amount"),
        ({"monthly_amount": ""}, "monthly_amount"),
        ({"monthly_amount": "10", "thresholds": [0]}, "thresholds.0"),
        ({"monthly_amount": "10", "thresholds": []}, "thresholds"),
        ({"monthly_amount": "10", "project": "web"}, "project"),
        ({"monthly_amount": "10", "colour": "red"}, "colour"),
    ],
)
def test_bad_budget_input_is_a_400_naming_the_field(alice, api_as, body, field):
    response = api_as(alice).put(BUDGETS, body, format="json")
    assert (response.status_code, field in response.json()["error"]["fields"]) == (400, True)


@pytest.mark.parametrize(
    ("caller", "status"),
    MANAGERS_READ,
)
def test_owners_and_admins_set_budgets_and_others_get_what_their_role_allows(
    actors, api_as, caller, status
):
    response = api_as(actors.get(caller)).put(BUDGETS, {"monthly_amount": "100"}, format="json")
    assert response.status_code == status


def test_the_api_answers_a_budget_with_what_it_spent(on_demand, alice, vision, api_as):
    spent_today(vision, 1)
    api_as(alice).put(BUDGETS, {"monthly_amount": "100", "hard_stop": True}, format="json")
    [listed] = api_as(alice).get(BUDGETS).json()
    assert (listed["monthly_amount"], listed["spent"], listed["hard_stop"]) == (
        "100.00",
        "23.20",
        True,
    )


def test_a_budget_is_deleted_and_another_tenants_is_a_404(alice, bruno, acme, api_as):
    made = budget(alice, acme, "10")
    foreign = api_as(bruno).delete(f"/api/v1/organizations/globex/budgets/{made.pk}/")
    mine = api_as(alice).delete(f"{BUDGETS}{made.pk}/")
    assert (foreign.status_code, mine.status_code) == (404, 204)
