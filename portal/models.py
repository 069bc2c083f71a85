"""The kernel's own rows: what it needs to keep its promises to every app."""

from django.db import models


class SentMail(models.Model):
    """One mail of one event to one recipient, recorded as it is sent: the event's key and the
    recipient are unique together, so a repeated service call or a retried task sends nothing
    more."""

    key = models.CharField(max_length=200)
    recipient = models.EmailField(max_length=254)
    subject = models.CharField(max_length=300, blank=True)
    sent_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["key", "recipient"], name="sent_mail_once"),
        ]
        indexes = [models.Index(fields=["sent_at"], name="sent_mail_sent_at")]

    def __str__(self) -> str:
        return f"{self.key} to {self.recipient}"


class WorkerHeartbeat(models.Model):
    """When a Celery worker last ran the heartbeat task, which beat sends every
    PORTAL_WORKER_HEARTBEAT_SECONDS (portal/health.py reads the latest)."""

    hostname = models.CharField(max_length=255, unique=True)
    seen_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.hostname}: {self.seen_at:%Y-%m-%d %H:%M:%S} UTC"


class SimulatedClock(models.Model):
    """How far tests (or the demo) have moved the portal's time forward (portal/clock.py)."""

    offset_seconds = models.FloatField(default=0)

    def __str__(self) -> str:
        return f"+{self.offset_seconds:g} s"
