"""An invitation's mail holds no lock on the invitation while the mail server answers."""

import pytest
from django.core.mail.backends.locmem import EmailBackend
from django.db import connection, transaction

from tenants import services
from tenants.models import Invitation, Role
from tenants.permissions import Caller

from ..threads import run_together


def _lock_invitations_at_once() -> str:
    with transaction.atomic():
        list(Invitation.objects.select_for_update(nowait=True))
    return "free"


class LockProbingBackend(EmailBackend):
    """A mail server that, while it takes a message, has another connection try to lock every
    invitation without waiting: what it found is kept in ``probes``."""

    probes: list = []

    def send_messages(self, messages):
        self.probes.extend(run_together(_lock_invitations_at_once))
        return super().send_messages(messages)


@pytest.mark.django_db(transaction=True)
def test_no_invitation_is_locked_while_its_mail_is_sent(settings, alice, acme):
    if connection.vendor != "postgresql":
        pytest.skip("row locks are PostgreSQL's; set DATABASE_URL")
    settings.EMAIL_BACKEND = f"{__name__}.LockProbingBackend"
    LockProbingBackend.probes = []
    invitation = services.member_invite(
        caller=Caller(user=alice), organization=acme, email="new@acme.example", role=Role.MEMBER
    )
    services.invitation_email_send(invitation_id=str(invitation.pk))
    assert LockProbingBackend.probes == ["free"]
