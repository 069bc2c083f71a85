import pytest

from tenants.models import AuditEvent, Organization

from ..factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator_client(client):
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    return client


@pytest.mark.parametrize(
    "model", ["organization", "membership", "project", "invitation", "apitoken", "auditevent"]
)
def test_every_tenancy_model_has_an_operator_list(model, operator_client, alice, ai_dev):
    response = operator_client.get(f"/admin/tenants/{model}/", {"q": "acme"})
    assert response.status_code == 200


def test_the_suspend_action_suspends_through_the_service(operator_client, acme):
    operator_client.post(
        "/admin/tenants/organization/",
        {"action": "suspend", "_selected_action": [str(acme.pk)]},
    )
    acme.refresh_from_db()
    assert acme.status == Organization.Status.SUSPENDED
    assert AuditEvent.objects.filter(action="organization.suspend").exists()


def test_the_reactivate_action_reactivates(operator_client, acme):
    Organization.objects.filter(pk=acme.pk).update(status="suspended")
    operator_client.post(
        "/admin/tenants/organization/",
        {"action": "reactivate", "_selected_action": [str(acme.pk)]},
    )
    acme.refresh_from_db()
    assert acme.status == Organization.Status.ACTIVE


def test_an_operator_sets_the_fair_share_weight(operator_client, acme):
    response = operator_client.post(
        f"/admin/tenants/organization/{acme.pk}/change/",
        {
            "name": acme.name,
            "billing_email": "",
            "fair_share_weight": "2.50",
            "memberships-TOTAL_FORMS": "0",
            "memberships-INITIAL_FORMS": "0",
            "projects-TOTAL_FORMS": "0",
            "projects-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 302
    acme.refresh_from_db()
    assert str(acme.fair_share_weight) == "2.50"


def test_the_audit_trail_cannot_be_edited_in_admin(operator_client, alice, acme):
    event = AuditEvent.objects.create(
        organization=acme, action="x", target_type="t", target_id="1", target_label="l"
    )
    response = operator_client.post(
        f"/admin/tenants/auditevent/{event.pk}/delete/", {"post": "yes"}
    )
    assert response.status_code == 403
    assert AuditEvent.objects.filter(pk=event.pk).exists()
