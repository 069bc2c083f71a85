import pytest

from tenants import services
from tenants.models import AuditEvent, Organization
from tenants.permissions import Caller

from ..factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator_client(client):
    client.force_login(UserFactory(email="ops@example.com", is_staff=True, is_superuser=True))
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


def organization_page(organization, roles: dict, *, remove=(), **fields) -> dict:
    """The organization's change form as admin posts it: its fields, and each membership's
    role (``roles``: membership to role; ``remove``: memberships to delete)."""
    data = {
        "name": organization.name,
        "billing_email": organization.billing_email,
        "time_zone": organization.time_zone,
        "fair_share_weight": str(organization.fair_share_weight),
        "memberships-TOTAL_FORMS": str(len(roles)),
        "memberships-INITIAL_FORMS": str(len(roles)),
        "projects-TOTAL_FORMS": "0",
        "projects-INITIAL_FORMS": "0",
        **fields,
    }
    for index, (membership, role) in enumerate(roles.items()):
        data[f"memberships-{index}-id"] = str(membership.pk)
        data[f"memberships-{index}-organization"] = str(organization.pk)
        data[f"memberships-{index}-user"] = str(membership.user_id)
        data[f"memberships-{index}-role"] = role
        if membership in remove:
            data[f"memberships-{index}-DELETE"] = "on"
    return data


def test_the_last_owner_cannot_be_demoted_in_admin(operator_client, acme, alice, adam):
    owner, admin_ = (acme.memberships.get(user=u) for u in (alice, adam))
    response = operator_client.post(
        f"/admin/tenants/organization/{acme.pk}/change/",
        organization_page(acme, {owner: "admin", admin_: "admin"}),
    )
    owner.refresh_from_db()
    assert (response.status_code, owner.role) == (200, "owner")
    assert "at least one owner" in response.content.decode()


def test_the_last_owner_cannot_be_removed_in_admin(operator_client, acme, alice, adam):
    owner, admin_ = (acme.memberships.get(user=u) for u in (alice, adam))
    response = operator_client.post(
        f"/admin/tenants/organization/{acme.pk}/change/",
        organization_page(acme, {owner: "owner", admin_: "admin"}, remove=[owner]),
    )
    assert (response.status_code, acme.memberships.filter(role="owner").count()) == (200, 1)


def test_handing_the_owner_role_over_in_one_save_keeps_an_owner(operator_client, acme, alice, adam):
    owner, admin_ = (acme.memberships.get(user=u) for u in (alice, adam))
    response = operator_client.post(
        f"/admin/tenants/organization/{acme.pk}/change/",
        organization_page(acme, {owner: "admin", admin_: "owner"}),
    )
    assert response.status_code == 302
    assert dict(acme.memberships.values_list("user__email", "role")) == {
        "alice@acme.example": "admin",
        "adam@acme.example": "owner",
    }


def test_a_role_changed_in_admin_is_audited_as_the_operators(operator_client, acme, alice, mia):
    owner, member = (acme.memberships.get(user=u) for u in (alice, mia))
    operator_client.post(
        f"/admin/tenants/organization/{acme.pk}/change/",
        organization_page(acme, {owner: "owner", member: "viewer"}),
    )
    event = AuditEvent.objects.get(action="member.role_change")
    assert (event.actor_email, event.payload) == (
        "ops@example.com",
        {"from": "member", "to": "viewer"},
    )


def test_a_member_removed_in_admin_is_audited_and_their_tokens_end(
    operator_client, acme, alice, mia, token_for
):
    token, _ = token_for(mia, acme, scope="read")
    owner, member = (acme.memberships.get(user=u) for u in (alice, mia))
    operator_client.post(
        f"/admin/tenants/organization/{acme.pk}/change/",
        organization_page(acme, {owner: "owner", member: "member"}, remove=[member]),
    )
    token.refresh_from_db()
    assert AuditEvent.objects.filter(action="member.remove").count() == 1
    assert (acme.memberships.filter(user=mia).exists(), token.revoked_at is not None) == (
        False,
        True,
    )


def test_an_organization_changed_in_admin_is_audited_with_its_changes(operator_client, acme, alice):
    owner = acme.memberships.get(user=alice)
    operator_client.post(
        f"/admin/tenants/organization/{acme.pk}/change/",
        organization_page(acme, {owner: "owner"}, fair_share_weight="2.50", name="Acme Labs"),
    )
    event = AuditEvent.objects.get(action="organization.update")
    assert event.payload == {
        "name": {"from": "Acme AI", "to": "Acme Labs"},
        "fair_share_weight": {"from": "1.00", "to": "2.50"},
    }


@pytest.mark.parametrize("model", ["membership", "project", "invitation", "apitoken"])
def test_tenant_owned_rows_have_read_only_pages_in_admin(
    model, operator_client, acme, alice, ai_dev, token_for
):
    from tenants.models import ApiToken, Invitation, Membership, Project

    token_for(alice, acme)
    services.member_invite(
        caller=Caller(user=alice), organization=acme, email="new@acme.example", role="member"
    )
    row = {
        "membership": Membership,
        "project": Project,
        "invitation": Invitation,
        "apitoken": ApiToken,
    }[model].objects.first()
    page = operator_client.get(f"/admin/tenants/{model}/{row.pk}/change/")
    saved = operator_client.post(f"/admin/tenants/{model}/{row.pk}/change/", {})
    assert (page.status_code, 'name="_save"' in page.content.decode()) == (200, False)
    assert saved.status_code == 403


def test_admin_names_organizations_by_name(operator_client, acme, alice):
    page = operator_client.get("/admin/tenants/membership/").content.decode()
    assert ("Acme AI" in page, "alice@acme.example" in page) == (True, True)


def test_admin_lists_users_by_their_e_mail_address(operator_client, alice):
    alice.username = "alice-a345ec"
    alice.save(update_fields=["username"])
    page = operator_client.get("/admin/auth/user/").content.decode()
    assert ("alice@acme.example" in page, "alice-a345ec" in page) == (True, False)


def test_admin_names_users_by_e_mail_where_it_links_them(operator_client, acme, alice):
    alice.username = "alice-a345ec"
    alice.save(update_fields=["username"])
    membership = acme.memberships.get(user=alice)
    page = operator_client.get(f"/admin/tenants/organization/{acme.pk}/change/")
    assert (str(membership.user), "alice-a345ec" in page.content.decode()) == (
        "alice@acme.example",
        False,
    )
