"""The kernel's one mail helper: one mail per event and recipient, never twice."""

import pytest
from django.core import mail
from django.core.mail.backends.base import BaseEmailBackend
from django.db import connection

from portal.mail import mail_send
from portal.models import SentMail

from ..threads import run_together

pytestmark = pytest.mark.django_db

TEMPLATE = "billing/email/order_cancelled.txt"


class RefusingBackend(BaseEmailBackend):
    """An SMTP server that is down."""

    def send_messages(self, email_messages):
        raise OSError("connection refused")


def send(key="order:1:cancelled", recipients=("a@x.example", "b@x.example")) -> int:
    return mail_send(key=key, recipients=recipients, template=TEMPLATE, context={})


def test_each_recipient_gets_a_mail_of_their_own():
    send()
    assert sorted(m.to for m in mail.outbox) == [["a@x.example"], ["b@x.example"]]


def test_the_same_event_sent_again_mails_nobody_more():
    send()
    assert (send(), len(mail.outbox)) == (0, 2)


def test_a_recipient_added_later_gets_the_mail_the_others_had():
    send(recipients=["a@x.example"])
    send()
    assert [m.to for m in mail.outbox] == [["a@x.example"], ["b@x.example"]]


def test_an_address_is_one_recipient_whatever_its_case():
    send(recipients=["A@x.example", "a@x.example"])
    assert len(mail.outbox) == 1


def test_another_event_of_the_same_object_is_mailed():
    send()
    send(key="order:1:fulfilled")
    assert len(mail.outbox) == 4


def test_a_failed_send_records_nothing_so_that_the_retry_sends_it(settings):
    settings.EMAIL_BACKEND = f"{__name__}.RefusingBackend"
    with pytest.raises(OSError):
        send(recipients=["a@x.example"])
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    send(recipients=["a@x.example"])
    assert (len(mail.outbox), SentMail.objects.count()) == (1, 1)


@pytest.mark.django_db(transaction=True)
def test_the_same_event_sent_by_two_workers_at_once_is_mailed_once():
    if connection.vendor != "postgresql":
        pytest.skip("concurrent transactions are raced on PostgreSQL; set DATABASE_URL")
    outcomes = run_together(*[lambda: send(recipients=["a@x.example"])] * 4)
    assert (sorted(outcomes), len(mail.outbox)) == ([0, 0, 0, 1], 1)
