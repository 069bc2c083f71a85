import pytest

from scheduling.models import Node, Workload

from ..factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator_client(client):
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    return client


@pytest.mark.parametrize(
    "model",
    [
        "gpuclass",
        "nodepool",
        "node",
        "prioritytier",
        "quotagrant",
        "quotarequest",
        "reservation",
        "reservationrule",
        "workload",
        "provisioningrecord",
        "schedulerstate",
        "simulatednodestate",
    ],
)
def test_every_scheduling_model_has_an_operator_list(model, operator_client, submit):
    assert operator_client.get(f"/admin/scheduling/{model}/").status_code == 200


def test_a_workload_page_shows_its_placements_and_timeline(operator_client, submit, cycle):
    workload = submit()
    cycle()
    page = operator_client.get(f"/admin/scheduling/workload/{workload.pk}/change/")
    assert page.status_code == 200
    assert b"dgx-h100" in page.content


def test_draining_a_node_from_admin_requeues_its_workload(operator_client, submit, cycle):
    workload = submit()
    cycle()
    node = workload.placements.get().node
    operator_client.post(
        "/admin/scheduling/node/", {"action": "drain", "_selected_action": [node.pk]}
    )
    workload.refresh_from_db()
    assert (workload.state, Node.objects.get(pk=node.pk).cordoned) == ("Pending", True)


def test_stopping_a_workload_from_admin_cancels_it(operator_client, submit):
    workload = submit()
    operator_client.post(
        "/admin/scheduling/workload/", {"action": "stop", "_selected_action": [str(workload.pk)]}
    )
    workload.refresh_from_db()
    assert workload.state == Workload.State.CANCELLED
    assert "operator" in workload.status_reason


def test_a_cordoned_node_receives_no_new_workload(operator_client, submit, cycle):
    operator_client.post(
        "/admin/scheduling/node/",
        {"action": "cordon", "_selected_action": list(Node.objects.values_list("pk", flat=True))},
    )
    workload = submit()
    cycle()
    workload.refresh_from_db()
    assert workload.state == Workload.State.PENDING


def test_changing_a_quota_in_admin_reprovisions_the_organizations_namespaces(
    operator_client, quotas, acme, ai_dev, django_capture_on_commit_callbacks
):
    from scheduling.models import QuotaGrant

    grant = QuotaGrant.objects.get(organization=acme, gpu_class__name="L4", resource="gpus")
    with django_capture_on_commit_callbacks() as callbacks:
        response = operator_client.post(
            f"/admin/scheduling/quotagrant/{grant.pk}/change/",
            {
                "organization": acme.pk,
                "gpu_class": grant.gpu_class_id,
                "resource": "gpus",
                "mig_profile": "",
                "guarantee": 4,
                "limit": 12,
                "cohort": "",
            },
        )
    assert response.status_code == 302
    grant.refresh_from_db()
    assert (grant.guarantee, grant.limit) == (4, 12)
    assert len(callbacks) == 1  # one project: one provisioning task


def test_a_quota_whose_limit_is_below_its_guarantee_is_refused(operator_client, quotas, acme):
    from scheduling.models import QuotaGrant

    grant = QuotaGrant.objects.get(organization=acme, gpu_class__name="L4", resource="gpus")
    response = operator_client.post(
        f"/admin/scheduling/quotagrant/{grant.pk}/change/",
        {"organization": acme.pk, "gpu_class": grant.gpu_class_id, "guarantee": 9, "limit": 2},
    )
    assert response.status_code == 200
    grant.refresh_from_db()
    assert grant.limit == 16


@pytest.fixture
def requested(cluster, alice, acme):
    from datetime import timedelta

    from scheduling import clock, services
    from tenants.permissions import Caller

    [reservation] = services.reservations_request(
        caller=Caller(user=alice),
        organization=acme,
        request=services.ReservationRequest(
            gpu_class="H100-80GB",
            gpus=8,
            starts_at=clock.now() + timedelta(days=1),
            ends_at=clock.now() + timedelta(days=1, hours=2),
            pool="dgx-h100",
        ),
    )
    return reservation


def test_an_operator_approves_a_reservation_from_admin(operator_client, requested):
    operator_client.post(
        "/admin/scheduling/reservation/",
        {"action": "approve", "_selected_action": [str(requested.pk)]},
    )
    requested.refresh_from_db()
    assert requested.state == "approved"


def test_rejecting_in_admin_asks_for_a_reason_first(operator_client, requested):
    response = operator_client.post(
        "/admin/scheduling/reservation/",
        {"action": "reject", "_selected_action": [str(requested.pk)]},
    )
    requested.refresh_from_db()
    assert (response.status_code, "reason" in response.content.decode(), requested.state) == (
        200,
        True,
        "requested",
    )


def test_an_operator_rejects_a_reservation_with_its_reason(operator_client, requested):
    operator_client.post(
        "/admin/scheduling/reservation/",
        {
            "action": "reject",
            "_selected_action": [str(requested.pk)],
            "reason": "Maintenance.",
            "apply": "Reject",
        },
    )
    requested.refresh_from_db()
    assert (requested.state, requested.decision_reason) == ("rejected", "Maintenance.")
