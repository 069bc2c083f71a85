"""The demo's seed mails each of its events once, even when the mail queue runs after every
step and its tasks are retried."""

import io
from collections import Counter

import pytest
from django.core import mail
from django.core.management import call_command

from ..queued import Worker

pytestmark = pytest.mark.django_db


@pytest.fixture
def seeded(django_capture_on_commit_callbacks):
    worker = Worker(django_capture_on_commit_callbacks)
    worker.step(call_command, command_name="seed_demo", stdout=io.StringIO())
    worker.deliver()
    worker.redeliver()
    return Counter((m.to[0], m.subject) for m in mail.outbox)


def test_the_seeded_reservation_is_mailed_approved_once(seeded):
    approved = "Reservation of 16 H100-80GB GPUs for Acme AI: approved"
    assert [n for (_, subject), n in seeded.items() if subject == approved] == [1]


def test_no_seeded_event_is_mailed_twice_to_anyone(seeded):
    assert [key for key, n in seeded.items() if n > 1] == []
