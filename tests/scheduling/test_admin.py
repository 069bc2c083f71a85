import re

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
        "cluster",
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
        "eviction",
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


def test_a_torn_down_workloads_page_shows_what_was_kept_of_its_logs(
    operator_client, submit, cycle, advance
):
    workload = submit(env={"SIMULATED_RUNTIME_SECONDS": "120"})
    cycle()
    advance(200)  # it ended, and the status sync deleted its objects
    page = operator_client.get(f"/admin/scheduling/workload/{workload.pk}/change/")
    assert b"Workload log tails" in page.content
    kept = re.findall(rb'field-lines_kept">\s*<p>(\d+)</p>', page.content)
    assert kept == [b"15"]  # its 2 first lines, 11 of progress, its 2 of summary


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

    from portal import clock
    from scheduling import services
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


def test_cordoning_and_uncordoning_in_admin_are_audited(operator_client, cluster):
    from tenants.models import AuditEvent

    node = Node.objects.first()
    for action in ("cordon", "uncordon"):
        operator_client.post(
            "/admin/scheduling/node/", {"action": action, "_selected_action": [node.pk]}
        )
    events = AuditEvent.objects.filter(target_id=str(node.pk)).order_by("at")
    assert [e.action for e in events] == ["node.cordon", "node.uncordon"]


def test_the_workload_page_is_read_only(operator_client, submit):
    workload = submit()
    page = operator_client.get(f"/admin/scheduling/workload/{workload.pk}/change/")
    content = page.content.decode()
    assert (page.status_code, 'name="_save"' in content, 'name="name"' in content) == (
        200,
        False,
        False,
    )


def test_a_node_page_is_read_only_so_cordoning_goes_through_the_audited_action(
    operator_client, cluster
):
    node = Node.objects.first()
    response = operator_client.post(f"/admin/scheduling/node/{node.pk}/change/", {"cordoned": "on"})
    assert (response.status_code, Node.objects.get(pk=node.pk).cordoned) == (403, False)


def test_a_tier_changed_in_admin_is_audited_with_what_changed(operator_client, cluster):
    from django.utils.duration import duration_string

    from scheduling.models import PriorityTier
    from tenants.models import AuditEvent

    tier = PriorityTier.objects.get(name="training")
    response = operator_client.post(
        f"/admin/scheduling/prioritytier/{tier.pk}/change/",
        {
            "name": tier.name,
            "value": 12345,
            "preemptible": "on" if tier.preemptible else "",
            "lost_work_credited": "on" if tier.lost_work_credited else "",
            "description": tier.description,
            **{
                field: duration_string(getattr(tier, field)) if getattr(tier, field) else ""
                for field in ("idle_warn_after", "idle_stop_after")
            },
        },
    )
    event = AuditEvent.objects.get(action="prioritytier.update")
    assert (response.status_code, event.payload) == (302, {"value": 12345})


def test_a_quota_below_its_guarantee_is_refused_with_a_sentence(operator_client, quotas, acme):
    from scheduling.models import QuotaGrant

    grant = QuotaGrant.objects.get(organization=acme, gpu_class__name="L4", resource="gpus")
    page = operator_client.post(
        f"/admin/scheduling/quotagrant/{grant.pk}/change/",
        {
            "organization": acme.pk,
            "gpu_class": grant.gpu_class_id,
            "resource": "gpus",
            "guarantee": 9,
            "limit": 2,
        },
    ).content.decode()
    assert ("quota_limit_ge_guarantee" in page, "cannot be below the guarantee" in page) == (
        False,
        True,
    )


def test_failing_and_recovering_a_simulated_node_in_admin_is_audited(operator_client, cluster):
    from scheduling.models import SimulatedNodeState
    from tenants.models import AuditEvent

    state = SimulatedNodeState.objects.create(name=Node.objects.first().name)
    for action in ("fail", "recover"):
        operator_client.post(
            "/admin/scheduling/simulatednodestate/",
            {"action": action, "_selected_action": [state.pk]},
        )
    events = AuditEvent.objects.filter(target_type="simulatednodestate").order_by("at")
    assert [e.action for e in events] == ["node.simulated_fail", "node.simulated_recover"]
