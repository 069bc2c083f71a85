import pytest
from django.core import mail

from tenants import services
from tenants.models import Invitation
from tenants.permissions import Caller
from tenants.tasks import invitation_email_send

pytestmark = pytest.mark.django_db


def test_the_invitation_task_mails_through_the_service(alice, acme):
    invitation = services.member_invite(
        caller=Caller(user=alice), organization=acme, email="n@x.example", role="member"
    )
    assert invitation_email_send(str(invitation.pk)) is True
    invitation.refresh_from_db()
    assert invitation.sent_at is not None
    assert mail.outbox[0].to == ["n@x.example"]


def test_the_invitation_task_skips_a_deleted_invitation(alice, acme):
    invitation = services.member_invite(
        caller=Caller(user=alice), organization=acme, email="n@x.example", role="member"
    )
    Invitation.objects.filter(pk=invitation.pk).delete()
    assert invitation_email_send(str(invitation.pk)) is False
