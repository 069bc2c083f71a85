"""An organization's webhook endpoints, and the deliveries of events to them with each attempt."""

import uuid

from django.conf import settings
from django.db import models

from portal import clock
from tenants.models import Organization


class EventType(models.TextChoices):
    WORKLOAD_STATE_CHANGED = "workload.state_changed", "A workload changed state"
    ORDER_DECIDED = "order.decided", "An order was approved or rejected"
    RESERVATION_DECIDED = "reservation.decided", "A reservation was approved or rejected"
    QUOTA_REQUEST_DECIDED = "quota_request.decided", "A quota request was approved or denied"
    INVOICE_ISSUED = "invoice.issued", "An invoice was issued"
    BUDGET_THRESHOLD_CROSSED = "budget.threshold_crossed", "A budget crossed a threshold"


class Endpoint(models.Model):
    """Where an organization's events are posted. The secret signs each delivery; it is shown
    in full only when the endpoint is created."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="webhook_endpoints"
    )
    # http or https, checked by the services (targets.py) when it is set.
    url = models.CharField(max_length=2000)
    description = models.CharField(max_length=200, blank=True)
    secret = models.CharField(max_length=200)
    event_types = models.JSONField(default=list)
    is_active = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=clock.wall)
    updated_at = models.DateTimeField(default=clock.wall)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return self.url

    @property
    def secret_hint(self) -> str:
        """Enough of the secret to tell it from another, never the whole of it."""
        return f"{self.secret[:10]}…"


class Delivery(models.Model):
    """One event sent to one endpoint: its body is fixed when it is made, so every attempt
    sends the same bytes under the same id (a receiver deduplicates on it)."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        REDELIVERING = "redelivering", "Redelivering"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="deliveries")
    event_type = models.CharField(max_length=40, choices=EventType.choices)
    # The publication this delivery is of and the object it tells of: one delivery each.
    event_id = models.UUIDField()
    object_id = models.CharField(max_length=64)
    body = models.TextField()
    state = models.CharField(max_length=20, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    # When the next automatic attempt is due (while pending or redelivering).
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_response_body = models.CharField(max_length=1000, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=clock.wall)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["endpoint", "event_id", "object_id"], name="webhook_delivery_once"
            )
        ]
        indexes = [models.Index(fields=["state", "next_attempt_at"])]
        verbose_name_plural = "deliveries"

    def __str__(self) -> str:
        return f"{self.event_type} {self.id}"


class Attempt(models.Model):
    """One try at sending a delivery, as the receiver answered (or did not)."""

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_set")
    number = models.PositiveIntegerField()
    at = models.DateTimeField(default=clock.wall)
    manual = models.BooleanField(default=False)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    response_body = models.CharField(max_length=1000, blank=True)
    error = models.CharField(max_length=500, blank=True)
    duration_ms = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["delivery", "number"]
        constraints = [
            models.UniqueConstraint(fields=["delivery", "number"], name="webhook_attempt_once")
        ]

    def __str__(self) -> str:
        return f"{self.delivery_id} #{self.number}"
