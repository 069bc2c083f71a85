"""The console's budgets page: each budget with this month's spend, set and removed by owners
and admins."""

from decimal import Decimal

import pytest

from billing import services
from billing.models import Budget
from tenants.permissions import Caller

from ..roles import CONSOLE_MANAGERS_READ

pytestmark = pytest.mark.django_db

URL = "/orgs/acme/budgets/"
FORM = {"project": "", "monthly_amount": "1000", "thresholds": "50, 80, 100"}


@pytest.fixture
def budget(acme, alice):
    return services.budget_save(
        caller=Caller(user=alice), organization=acme, monthly_amount=Decimal(500)
    )


@pytest.mark.parametrize(("caller", "status"), CONSOLE_MANAGERS_READ)
def test_owners_and_admins_see_the_budgets_page_and_nobody_else(
    acme, actors, client, caller, status
):
    if caller != "anonymous":
        client.force_login(actors[caller])
    assert client.get(URL).status_code == status


def test_an_owner_sets_the_organizations_budget(acme, alice, client):
    client.force_login(alice)
    client.post(URL, FORM)
    budget = Budget.objects.get(organization=acme)
    assert (budget.project, budget.monthly_amount, budget.thresholds) == (
        None,
        Decimal(1000),
        [50, 80, 100],
    )


def test_an_admin_sets_a_projects_budget_with_a_hard_stop(acme, adam, vision, client):
    client.force_login(adam)
    client.post(URL, FORM | {"project": "vision", "hard_stop": "on"})
    assert Budget.objects.get(organization=acme).project == vision


def test_thresholds_that_are_not_numbers_are_explained_on_the_field(acme, alice, client):
    client.force_login(alice)
    response = client.post(URL, FORM | {"thresholds": "50, lots"})
    assert ("Whole percentages" in response.content.decode(), Budget.objects.count()) == (True, 0)


def test_a_services_refusal_shows_on_the_field(acme, alice, client):
    client.force_login(alice)
    response = client.post(URL, FORM | {"thresholds": "50, 5000"})
    page = response.content.decode()
    assert ("Each threshold is a percentage from 1 to 1000." in page, Budget.objects.count()) == (
        True,
        0,
    )


def test_the_page_shows_the_spend_against_the_amount(budget, alice, client):
    client.force_login(alice)
    assert "of 500.00" in client.get(URL).content.decode()


def test_an_owner_removes_a_budget(budget, alice, client):
    client.force_login(alice)
    client.post(f"{URL}{budget.pk}/delete/")
    assert not Budget.objects.filter(pk=budget.pk).exists()


def test_a_member_cannot_remove_a_budget(budget, mia, client):
    client.force_login(mia)
    assert client.post(f"{URL}{budget.pk}/delete/").status_code == 403


def test_another_tenant_gets_a_404_removing_a_budget(budget, bruno, client):
    client.force_login(bruno)
    assert client.post(f"{URL}{budget.pk}/delete/").status_code == 404


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("monthly_amount", "-5"),
        ("monthly_amount", "1e100"),
        ("monthly_amount", "ten"),
        ("project", "not-ours"),
        ("thresholds", ""),
    ],
)
def test_hostile_input_is_refused_on_its_field_and_nothing_is_written(
    acme, alice, client, field, value
):
    client.force_login(alice)
    response = client.post(URL, FORM | {field: value})
    page = response.content.decode()
    assert (response.status_code, f'id="id_{field}_error"' in page or "errorlist" in page) == (
        200,
        True,
    )
    assert Budget.objects.count() == 0
