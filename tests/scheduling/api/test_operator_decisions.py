"""The operator API's decisions on reservations and quota requests: through the one approval
workflow, audited with the operator's token; a reason for a rejection; a second decision is a
409."""

from datetime import timedelta

import pytest

from portal import clock
from scheduling import services
from scheduling.models import QuotaGrant, QuotaRequest, Reservation
from tenants.models import AuditEvent
from tenants.permissions import Caller

pytestmark = pytest.mark.django_db

OP = "/api/v1/operator"


@pytest.fixture
def reservation(cluster, alice, acme):
    starts = clock.now().replace(microsecond=0) + timedelta(days=2)
    [held] = services.reservations_request(
        caller=Caller(user=alice),
        organization=acme,
        request=services.ReservationRequest(
            gpu_class="H100-80GB", gpus=8, starts_at=starts, ends_at=starts + timedelta(hours=4)
        ),
    )
    return held


@pytest.fixture
def quota_request(cluster, alice, acme):
    return services.quota_request_create(
        caller=Caller(user=alice),
        organization=acme,
        ask=services.QuotaAsk(gpu_class="H100-80GB", amount=8, reason="A new model"),
    )


def test_reservations_waiting_are_listed_across_tenants(reservation, ops):
    _, client = ops
    [row] = client.get(f"{OP}/reservations/?state=requested").json()["results"]
    assert (row["id"], row["organization"], row["state"]) == (
        str(reservation.pk),
        "acme",
        "requested",
    )


def test_an_operator_approves_a_reservation_audited_with_the_token(reservation, ops):
    user, client = ops
    response = client.post(f"{OP}/reservations/{reservation.pk}/approve/")
    assert (response.status_code, response.json()["state"]) == (200, "approved")
    reservation.refresh_from_db()
    assert (reservation.state, reservation.decided_by) == (Reservation.State.APPROVED, user)
    event = AuditEvent.objects.get(action="reservation.approve")
    assert event.via_token.owner == user


def test_a_rejection_says_why(reservation, ops):
    _, client = ops
    response = client.post(
        f"{OP}/reservations/{reservation.pk}/reject/", {"reason": "Maintenance"}, format="json"
    )
    assert response.json()["decision_reason"] == "Maintenance"
    assert AuditEvent.objects.get(action="reservation.reject").payload["reason"] == "Maintenance"


@pytest.mark.parametrize("body", [{}, {"reason": ""}, {"reason": "   "}])
def test_a_rejection_without_a_reason_is_a_field_error(reservation, ops, body):
    _, client = ops
    response = client.post(f"{OP}/reservations/{reservation.pk}/reject/", body, format="json")
    assert response.status_code == 400
    assert "reason" in response.json()["error"]["fields"]


def test_a_reservation_decided_twice_is_a_conflict(reservation, ops):
    _, client = ops
    client.post(f"{OP}/reservations/{reservation.pk}/approve/")
    response = client.post(
        f"{OP}/reservations/{reservation.pk}/reject/", {"reason": "Late"}, format="json"
    )
    assert (response.status_code, response.json()["error"]["code"]) == (409, "not_requested")


def test_an_operator_grants_a_quota_request_its_amount_or_another(quota_request, ops):
    _, client = ops
    response = client.post(
        f"{OP}/quota-requests/{quota_request.pk}/approve/", {"amount": 4}, format="json"
    )
    assert (response.status_code, response.json()["granted_amount"]) == (200, 4)
    grant = QuotaGrant.objects.get(
        organization=quota_request.organization, gpu_class__name="H100-80GB"
    )
    assert (grant.guarantee, grant.limit) == (4, 4)
    assert AuditEvent.objects.filter(action="quota_request.approve").count() == 1


def test_a_quota_request_approved_with_no_body_grants_what_was_asked(quota_request, ops):
    _, client = ops
    response = client.post(f"{OP}/quota-requests/{quota_request.pk}/approve/")
    assert response.json()["granted_amount"] == 8


def test_an_amount_granted_below_one_is_a_field_error(quota_request, ops):
    _, client = ops
    response = client.post(
        f"{OP}/quota-requests/{quota_request.pk}/approve/", {"amount": 0}, format="json"
    )
    assert response.status_code == 400
    assert "amount" in response.json()["error"]["fields"]


def test_a_quota_request_denied_twice_is_a_conflict(quota_request, ops):
    _, client = ops
    first = client.post(
        f"{OP}/quota-requests/{quota_request.pk}/reject/", {"reason": "No"}, format="json"
    )
    second = client.post(
        f"{OP}/quota-requests/{quota_request.pk}/reject/", {"reason": "No"}, format="json"
    )
    assert (first.json()["state"], second.status_code) == (QuotaRequest.State.DENIED, 409)


def test_a_decision_on_an_id_that_is_no_request_is_a_404(cluster, ops):
    _, client = ops
    assert client.post(f"{OP}/quota-requests/not-a-uuid/approve/").status_code == 404
