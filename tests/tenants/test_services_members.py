from datetime import timedelta

import pytest
from django.core import mail
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone

from portal.errors import Conflict
from tenants import services
from tenants.models import ApiToken, AuditEvent, Invitation, Membership, Role
from tenants.permissions import Caller

from ..factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


def invite(organization, inviter, email="new@acme.example", role=Role.MEMBER) -> Invitation:
    return services.member_invite(
        caller=Caller(user=inviter), organization=organization, email=email, role=role
    )


def test_an_invitation_expires_after_seven_days(alice, acme):
    invitation = invite(acme, alice)
    assert invitation.expires_at - invitation.created_at == timedelta(days=7)


def test_an_invitation_for_an_existing_member_is_a_field_error(alice, mia, acme):
    with pytest.raises(ValidationError) as error:
        invite(acme, alice, email="MIA@acme.example")
    assert "email" in error.value.message_dict


def test_a_second_open_invitation_for_the_same_address_is_refused(alice, acme):
    invite(acme, alice)
    with pytest.raises(ValidationError) as error:
        invite(acme, alice, email="New@Acme.example")
    assert "email" in error.value.message_dict
    assert Invitation.objects.count() == 1


def test_an_expired_invitation_can_be_replaced_by_a_new_one(alice, acme):
    old = invite(acme, alice)
    Invitation.objects.filter(pk=old.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    invite(acme, alice)
    old.refresh_from_db()
    assert old.state() == "revoked"


def test_an_admin_cannot_invite_an_owner(adam, acme):
    with pytest.raises(PermissionDenied):
        invite(acme, adam, role=Role.OWNER)
    assert not Invitation.objects.exists()


def test_the_invitation_email_carries_a_link_that_accepts_it(alice, acme):
    invitation = invite(acme, alice)
    assert services.invitation_email_send(invitation_id=str(invitation.pk)) is True
    assert mail.outbox[0].to == ["new@acme.example"]
    assert services.invitation_url(invitation) in mail.outbox[0].body


def test_an_invitation_is_mailed_only_once(alice, acme):
    invitation = invite(acme, alice)
    services.invitation_email_send(invitation_id=str(invitation.pk))
    assert services.invitation_email_send(invitation_id=str(invitation.pk)) is False
    assert len(mail.outbox) == 1


def test_a_revoked_invitation_is_not_mailed(alice, acme):
    invitation = invite(acme, alice)
    services.invitation_revoke(caller=Caller(user=alice), invitation=invitation)
    assert services.invitation_email_send(invitation_id=str(invitation.pk)) is False
    assert mail.outbox == []


def test_accepting_an_invitation_adds_the_member_with_its_role(alice, acme):
    invitation = invite(acme, alice, role=Role.VIEWER)
    newcomer = UserFactory(email="new@acme.example")
    membership = services.invitation_accept(
        user=newcomer, token=services.invitation_token(invitation)
    )
    invitation.refresh_from_db()
    assert (membership.role, invitation.accepted_by) == (Role.VIEWER, newcomer)
    assert AuditEvent.objects.filter(action="invitation.accept", actor=newcomer).exists()


def test_an_invitation_cannot_be_used_twice(alice, acme):
    invitation = invite(acme, alice)
    token = services.invitation_token(invitation)
    newcomer = UserFactory(email="new@acme.example")
    services.invitation_accept(user=newcomer, token=token)
    with pytest.raises(Conflict) as error:
        services.invitation_accept(user=newcomer, token=token)
    assert error.value.code == "invitation_accepted"


def test_an_expired_invitation_cannot_be_accepted(alice, acme):
    invitation = invite(acme, alice)
    Invitation.objects.filter(pk=invitation.pk).update(expires_at=timezone.now())
    with pytest.raises(Conflict) as error:
        services.invitation_accept(
            user=UserFactory(email="new@acme.example"), token=services.invitation_token(invitation)
        )
    assert error.value.code == "invitation_expired"
    assert not Membership.objects.filter(user__email="new@acme.example").exists()


def test_a_revoked_invitation_cannot_be_accepted(alice, acme):
    invitation = invite(acme, alice)
    services.invitation_revoke(caller=Caller(user=alice), invitation=invitation)
    with pytest.raises(Conflict) as error:
        services.invitation_accept(
            user=UserFactory(email="new@acme.example"), token=services.invitation_token(invitation)
        )
    assert error.value.code == "invitation_revoked"


def test_an_invitation_is_accepted_only_by_its_addressee(alice, acme, otto):
    invitation = invite(acme, alice)
    with pytest.raises(PermissionDenied):
        services.invitation_accept(user=otto, token=services.invitation_token(invitation))
    assert not acme.memberships.filter(user=otto).exists()


def test_a_forged_invitation_token_is_a_field_error(otto):
    with pytest.raises(ValidationError) as error:
        services.invitation_accept(user=otto, token="not-a-signed-token")
    assert "token" in error.value.message_dict


def test_an_admin_cannot_demote_an_owner(alice, adam, acme):
    owner = Membership.objects.get(user=alice)
    with pytest.raises(PermissionDenied):
        services.member_role_change(caller=Caller(user=adam), membership=owner, role=Role.MEMBER)
    owner.refresh_from_db()
    assert owner.role == Role.OWNER


def test_the_last_owner_cannot_step_down(alice, acme):
    owner = Membership.objects.get(user=alice)
    with pytest.raises(Conflict) as error:
        services.member_role_change(caller=Caller(user=alice), membership=owner, role=Role.ADMIN)
    assert error.value.code == "last_owner"


def test_an_owner_can_step_down_once_another_owner_exists(alice, acme):
    MembershipFactory(organization=acme, role=Role.OWNER)
    owner = Membership.objects.get(user=alice)
    services.member_role_change(caller=Caller(user=alice), membership=owner, role=Role.ADMIN)
    owner.refresh_from_db()
    assert owner.role == Role.ADMIN


def test_a_role_change_is_audited_with_before_and_after(alice, mia, acme):
    membership = Membership.objects.get(user=mia)
    services.member_role_change(caller=Caller(user=alice), membership=membership, role=Role.VIEWER)
    event = AuditEvent.objects.get(action="member.role_change")
    assert event.payload == {"from": "member", "to": "viewer"}


def test_the_last_owner_cannot_leave(alice, acme):
    with pytest.raises(Conflict):
        services.member_remove(
            caller=Caller(user=alice), membership=Membership.objects.get(user=alice)
        )
    assert Membership.objects.filter(user=alice).exists()


def test_a_viewer_may_leave_on_their_own(vic, acme):
    services.member_remove(caller=Caller(user=vic), membership=Membership.objects.get(user=vic))
    assert not acme.memberships.filter(user=vic).exists()
    assert AuditEvent.objects.filter(action="member.leave").exists()


def test_removing_a_member_revokes_their_tokens_there(alice, mia, acme, token_for):
    token, _ = token_for(mia, acme)
    services.member_remove(caller=Caller(user=alice), membership=Membership.objects.get(user=mia))
    token.refresh_from_db()
    assert token.state() == "revoked"
    assert ApiToken.objects.filter(owner=mia, revoked_at__isnull=True).count() == 0
