"""Operators read what was mailed to whom in admin, and change none of it."""

import pytest

from portal import clock
from portal.models import SentMail

from ..factories import UserFactory

pytestmark = pytest.mark.django_db

LIST = "/admin/portal/sentmail/"


@pytest.fixture
def operator_client(client):
    client.force_login(UserFactory(email="ops@example.com", is_staff=True, is_superuser=True))
    return client


def sent(key: str, recipient: str) -> SentMail:
    return SentMail.objects.create(
        key=key, recipient=recipient, subject=f"About {key}", sent_at=clock.wall()
    )


def test_the_sent_mails_are_searched_by_event_key(operator_client):
    sent("order:1:approved", "a@x.example")
    sent("invitation:2", "b@x.example")
    page = operator_client.get(LIST, {"q": "order:1"}).content.decode()
    assert ("About order:1:approved" in page, "About invitation:2" in page) == (True, False)


def test_the_sent_mails_are_searched_by_recipient(operator_client):
    sent("order:1:approved", "a@x.example")
    sent("invitation:2", "b@x.example")
    page = operator_client.get(LIST, {"q": "b@x"}).content.decode()
    assert ("About invitation:2" in page, "About order:1:approved" in page) == (True, False)


def test_a_sent_mail_can_be_neither_added_changed_nor_deleted(operator_client):
    mail = sent("order:1:approved", "a@x.example")
    change = operator_client.get(f"{LIST}{mail.pk}/change/").content.decode()
    assert (
        operator_client.get(f"{LIST}add/").status_code,
        'name="_save"' in change,
        operator_client.post(f"{LIST}{mail.pk}/delete/", {"post": "yes"}).status_code,
        SentMail.objects.count(),
    ) == (403, False, 403, 1)
