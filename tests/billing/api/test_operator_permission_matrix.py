"""The operator API of billing, cell by cell: every endpoint answers the operator (a token
with the operator scope, or staff signed in) and is a 404 to every other caller."""

from datetime import timedelta

import pytest

from billing import services
from portal import clock
from tenants.permissions import Caller

from ...conftest import tenancy_create
from ...factories import ProjectFactory, UserFactory, h100_reservation_offered
from ...module_state import kept_for_the_module
from ...operators import CALLERS, assert_reached_only_by_operators, operator_api_caller
from ...scheduling.conftest import cluster_sync, demo_backend
from ..conftest import order, rated

pytestmark = pytest.mark.django_db

OP = "/api/v1/operator"

# name: (method, path, body, status for an operator)
OPERATIONS = {
    "orders list": ("get", f"{OP}/orders/?state=submitted", None, 200),
    "order approve": ("post", f"{OP}/orders/{{order}}/approve/", None, 200),
    "order reject": ("post", f"{OP}/orders/{{order}}/reject/", {"reason": "No stock"}, 200),
    "invoices list": ("get", f"{OP}/invoices/", None, 200),
    "invoice issue": ("post", f"{OP}/invoices/{{draft}}/issue/", None, 200),
    "invoice void": ("post", f"{OP}/invoices/{{issued}}/void/", {"reason": "Wrong rate"}, 200),
    "credit note": (
        "post",
        f"{OP}/invoices/{{issued}}/credit-notes/",
        {"amount": "10.00", "reason": "Outage"},
        201,
    ),
    "credits list": ("get", f"{OP}/credits/", None, 200),
    "cost models list": ("get", f"{OP}/cost-models/", None, 200),
    "cost model add": (
        "post",
        f"{OP}/cost-models/",
        {
            "pool": "dgx-h100",
            "purchase_price_per_gpu": "30000.00",
            "lifetime_months": 48,
            "nameplate_watts": 700,
            "price_per_kwh": "0.2000",
        },
        201,
    ),
    "books": ("get", f"{OP}/books/2026/11/", None, 200),
    "books export": ("get", f"{OP}/books/2026/11/csv/", None, 200),
    "showback get": ("get", f"{OP}/organizations/globex/showback/", None, 200),
    "showback set": ("put", f"{OP}/organizations/globex/showback/", {"level": "hours"}, 200),
    "credit grant": (
        "post",
        f"{OP}/credits/",
        {"organization": "acme", "amount": "50.00", "reason": "Outage"},
        201,
    ),
}


def last_month_invoice(organization, operator, *, issued: bool):
    """The organization's invoice of last month, 100.00 of H100 use: issued, or a draft."""
    first = clock.now().replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    before = first - timedelta(days=1)
    rated(ProjectFactory(organization=organization), starts_at=before, cost="100.00")
    draft = services.invoice_draft(organization=organization, year=before.year, month=before.month)
    if issued:
        return services.invoice_issue(caller=Caller(user=operator), invoice=draft)
    return draft


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """The demo cluster, reserved H100s in the catalog and the tenancy actors, built once for
    the module (each cell runs in a transaction of its own, rolled back): acme has submitted
    an order and was issued last month's invoice; globex's waits as a draft."""
    with kept_for_the_module(django_db_blocker):
        tenancy = tenancy_create()
        acme, globex, actors = tenancy["acme"], tenancy["globex"], tenancy["actors"]
        cluster_sync(demo_backend())
        operator = UserFactory(email="ops@example.com", is_staff=True)
        h100_reservation_offered(operator)
        yield {
            **tenancy,
            "ids": {
                "order": order(actors["owner"], acme).pk,
                "issued": last_month_invoice(acme, operator, issued=True).pk,
                "draft": last_month_invoice(globex, operator, issued=False).pk,
            },
        }


@pytest.fixture
def acme(world):
    return world["acme"]


@pytest.fixture
def actors(world):
    return world["actors"]


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_only_operators_reach_the_operator_api(operation, caller, world, actors, acme, token_for):
    client = operator_api_caller(caller, actors, acme, token_for)
    assert_reached_only_by_operators(OPERATIONS[operation], caller, world["ids"], client)
