"""The operator API's orders: every organization's listed, approved or rejected through the
one approval workflow, audited with the operator's token."""

import pytest

from billing.models import Order
from tenants.models import AuditEvent

from ..conftest import order

pytestmark = pytest.mark.django_db

OP = "/api/v1/operator"


@pytest.fixture
def submitted(reserved, alice, acme):
    return order(alice, acme)


def test_orders_waiting_are_listed_across_tenants_with_their_money(submitted, ops):
    _, client = ops
    order(submitted.created_by, submitted.organization, submit=False)
    [row] = client.get(f"{OP}/orders/?state=submitted").json()["results"]
    assert (row["id"], row["organization"]) == (str(submitted.pk), "acme")
    assert row["total"] == str(submitted.total)


def test_an_operator_approves_an_order_audited_with_the_token(submitted, ops):
    user, client = ops
    response = client.post(f"{OP}/orders/{submitted.pk}/approve/")
    assert response.status_code == 200
    submitted.refresh_from_db()
    assert submitted.decided_by == user
    assert submitted.state != Order.State.SUBMITTED
    assert AuditEvent.objects.get(action="order.approve").via_token.owner == user


def test_an_operator_rejects_an_order_saying_why(submitted, ops):
    _, client = ops
    response = client.post(
        f"{OP}/orders/{submitted.pk}/reject/", {"reason": "No capacity"}, format="json"
    )
    assert (response.json()["state"], response.json()["decision_reason"]) == (
        "rejected",
        "No capacity",
    )


def test_a_rejection_without_a_reason_is_a_field_error(submitted, ops):
    _, client = ops
    response = client.post(f"{OP}/orders/{submitted.pk}/reject/", {}, format="json")
    assert response.status_code == 400
    assert "reason" in response.json()["error"]["fields"]


def test_an_order_approved_twice_is_a_conflict(submitted, ops):
    _, client = ops
    client.post(f"{OP}/orders/{submitted.pk}/approve/")
    response = client.post(f"{OP}/orders/{submitted.pk}/approve/")
    assert (response.status_code, response.json()["error"]["code"]) == (409, "order_state")


def test_a_state_that_orders_do_not_have_is_a_field_error(reserved, ops):
    _, client = ops
    response = client.get(f"{OP}/orders/?state=waiting")
    assert response.status_code == 400
    assert "state" in response.json()["error"]["fields"]
