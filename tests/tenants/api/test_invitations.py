import pytest
from django.core import mail

from tenants import services
from tenants.models import Invitation, Membership
from tenants.permissions import Caller

from ...factories import UserFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/organizations/acme/invitations/"
ACCEPT = "/api/v1/invitations/accept/"


def test_creating_an_invitation_answers_it_pending(alice, api_as):
    response = api_as(alice).post(
        URL, {"email": "new@acme.example", "role": "viewer"}, format="json"
    )
    assert response.status_code == 201
    assert (response.json()["state"], response.json()["role"]) == ("pending", "viewer")


def test_the_invitation_email_is_queued_once_the_invitation_is_committed(
    alice, api_as, django_capture_on_commit_callbacks
):
    # The broker is not reached here: the queued task is run in-process by calling it.
    with django_capture_on_commit_callbacks() as callbacks:
        api_as(alice).post(URL, {"email": "new@acme.example"}, format="json")
    assert len(callbacks) == 1
    invitation = Invitation.objects.get()
    services.invitation_email_send(invitation_id=str(invitation.pk))
    assert mail.outbox[0].to == ["new@acme.example"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"email": "nope"}, "email"),
        ({"email": "a@b.example", "role": "god"}, "role"),
        ({"email": "a@b.example", "role": None}, "role"),
        ({}, "email"),
        ({"email": ("x" * 250) + "@b.example"}, "email"),
    ],
)
def test_invalid_input_is_a_400_naming_the_field_and_creates_nothing(alice, api_as, body, field):
    response = api_as(alice).post(URL, body, format="json")
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]
    assert not Invitation.objects.exists()


def test_revoking_answers_the_invitation_revoked(alice, acme, api_as):
    invitation = services.member_invite(
        caller=Caller(user=alice), organization=acme, email="n@x.example", role="member"
    )
    response = api_as(alice).post(f"{URL}{invitation.pk}/revoke/")
    assert (response.status_code, response.json()["state"]) == (200, "revoked")


def test_a_revoked_invitation_stays_readable_as_revoked(alice, acme, api_as):
    invitation = services.member_invite(
        caller=Caller(user=alice), organization=acme, email="n@x.example", role="member"
    )
    api_as(alice).post(f"{URL}{invitation.pk}/revoke/")
    assert api_as(alice).get(f"{URL}{invitation.pk}/").json()["state"] == "revoked"


def test_revoking_an_invitation_twice_is_a_409(alice, acme, api_as):
    invitation = services.member_invite(
        caller=Caller(user=alice), organization=acme, email="n@x.example", role="member"
    )
    api_as(alice).post(f"{URL}{invitation.pk}/revoke/")
    response = api_as(alice).post(f"{URL}{invitation.pk}/revoke/")
    assert (response.status_code, response.json()["error"]["code"]) == (
        409,
        "invitation_not_pending",
    )


def test_accepting_through_the_api_joins_the_organization(alice, acme, api_as):
    invitation = services.member_invite(
        caller=Caller(user=alice), organization=acme, email="n@x.example", role="member"
    )
    newcomer = UserFactory(email="n@x.example")
    response = api_as(newcomer).post(
        ACCEPT, {"token": services.invitation_token(invitation)}, format="json"
    )
    assert response.status_code == 201
    assert Membership.objects.filter(user=newcomer, organization=acme, role="member").exists()


def test_accepting_twice_is_a_409(alice, acme, api_as):
    invitation = services.member_invite(
        caller=Caller(user=alice), organization=acme, email="n@x.example", role="member"
    )
    client = api_as(UserFactory(email="n@x.example"))
    body = {"token": services.invitation_token(invitation)}
    client.post(ACCEPT, body, format="json")
    response = client.post(ACCEPT, body, format="json")
    assert (response.status_code, response.json()["error"]["code"]) == (409, "invitation_accepted")


def test_a_forged_token_is_a_400_on_the_token(otto, api_as):
    response = api_as(otto).post(ACCEPT, {"token": "forged"}, format="json")
    assert response.status_code == 400
    assert "token" in response.json()["error"]["fields"]


def test_accepting_someone_elses_invitation_is_a_403(alice, acme, otto, api_as):
    invitation = services.member_invite(
        caller=Caller(user=alice), organization=acme, email="n@x.example", role="member"
    )
    response = api_as(otto).post(
        ACCEPT, {"token": services.invitation_token(invitation)}, format="json"
    )
    assert response.status_code == 403
    assert not Membership.objects.filter(user=otto).exists()


def test_accepting_needs_a_signed_in_caller(api):
    assert api.post(ACCEPT, {"token": "x"}, format="json").status_code == 401
