"""Operator tokens: a staff user issues one (admin, or the `operator_token` command), for the
operator API and no organization's tenant API."""

import io
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from portal import clock
from portal.errors import Forbidden
from tenants import services
from tenants.models import ApiToken, AuditEvent
from tenants.permissions import Caller

from ..factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(db):
    return UserFactory(email="olga@ops.example", is_staff=True)


def test_a_staff_user_issues_an_operator_token_of_no_organization(staff):
    token, secret = services.operator_token_issue(caller=Caller(user=staff), name="cli")
    token.refresh_from_db()
    assert (token.scope, token.organization, token.owner) == ("operator", None, staff)
    assert services.token_authenticate(secret=secret) == token


def test_issuing_an_operator_token_is_audited(staff):
    token, _ = services.operator_token_issue(caller=Caller(user=staff), name="cli")
    event = AuditEvent.objects.get(action="token.issue", target_id=str(token.pk))
    assert (event.actor, event.organization, event.payload["scope"]) == (staff, None, "operator")


def test_a_user_who_is_not_staff_issues_no_operator_token(alice):
    with pytest.raises(Forbidden):
        services.operator_token_issue(caller=Caller(user=alice), name="cli")


def test_a_token_issues_no_operator_token_not_even_an_operator_token(staff):
    token, _ = services.operator_token_issue(caller=Caller(user=staff), name="cli")
    with pytest.raises(Forbidden):
        services.operator_token_issue(caller=Caller(user=staff, token=token), name="more")


def test_an_organization_issues_no_operator_token(alice, acme):
    with pytest.raises(ValidationError) as refused:
        services.token_issue(
            caller=Caller(user=alice), organization=acme, name="x", scope="operator"
        )
    assert "scope" in refused.value.message_dict


def test_an_operator_token_stops_being_one_when_its_user_leaves_staff(staff):
    token, _ = services.operator_token_issue(caller=Caller(user=staff), name="cli")
    staff.is_staff = False
    staff.save()
    assert not Caller(user=staff, token=token).is_operator


def test_a_staff_users_tenant_token_is_no_operator(acme, token_for):
    staff = UserFactory(email="sam@ops.example", is_staff=True)
    acme.memberships.create(user=staff, role="owner")
    token, _ = token_for(staff, acme)
    assert not Caller(user=staff, token=token).is_operator


def test_an_operator_token_reaches_no_organization_in_the_tenant_api(staff, acme, alice):
    _, secret = services.operator_token_issue(caller=Caller(user=staff), name="cli")
    acme.memberships.create(user=staff, role="owner")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert client.get("/api/v1/organizations/").json()["results"] == []
    assert client.get("/api/v1/organizations/acme/").status_code == 404


def test_the_command_prints_the_secret_of_a_new_operator_token(staff):
    out = io.StringIO()
    call_command(
        "operator_token",
        staff.email,
        "--name",
        "ci",
        "--days",
        "30",
        stdout=out,
        stderr=io.StringIO(),
    )
    token = services.token_authenticate(secret=out.getvalue().strip())
    assert (token.owner, token.scope, token.name) == (staff, "operator", "ci")
    assert timedelta(days=29) < token.expires_at - clock.wall() <= timedelta(days=30)


def test_the_command_refuses_a_user_who_is_not_staff(alice):
    with pytest.raises(CommandError, match="staff"):
        call_command("operator_token", alice.email, stdout=io.StringIO(), stderr=io.StringIO())


def test_admin_issues_the_signed_in_staff_user_an_operator_token(client):
    superuser = UserFactory(email="root@ops.example", is_staff=True, is_superuser=True)
    client.force_login(superuser)
    response = client.post(
        "/admin/tenants/apitoken/add/", {"name": "cli", "expires_at": ""}, follow=True
    )
    token = ApiToken.objects.get(owner=superuser)
    shown = [str(message) for message in response.context["messages"]]
    secret = shown[0].rsplit(" ", 1)[-1]
    assert (token.scope, token.organization) == ("operator", None)
    assert services.token_authenticate(secret=secret) == token
