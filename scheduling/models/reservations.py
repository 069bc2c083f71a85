"""Reservations: GPUs of a pool held for an organization over a window, and the rule that
approves them without an operator."""

import uuid
from datetime import datetime

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q

from portal import clock
from tenants.models import Organization, Project

from .inventory import GpuClass, NodePool
from .validators import mig_profile_validator


class ReservationRule(models.Model):
    """An organization's reservations within these bounds are approved without an operator."""

    organization = models.OneToOneField(
        Organization, on_delete=models.CASCADE, related_name="reservation_rule"
    )
    max_gpus = models.PositiveIntegerField(help_text="At most this many GPUs a window.")
    max_hours = models.PositiveIntegerField(help_text="At most this long a window.")

    def __str__(self) -> str:
        return f"{self.organization.slug}: up to {self.max_gpus} GPUs for {self.max_hours} h"

    def allows(self, *, gpus: int, hours: float) -> bool:
        return gpus <= self.max_gpus and hours <= self.max_hours


class Reservation(models.Model):
    """Whole GPUs of one class in one pool held for an organization (or one of its projects)
    over a window of time. Requested, approved and active reservations hold their GPUs: the
    sum over any instant never exceeds the pool's capacity."""

    class State(models.TextChoices):
        REQUESTED = "requested", "Requested"
        APPROVED = "approved", "Approved"
        ACTIVE = "active", "Active"
        COMPLETED = "completed", "Completed"
        REJECTED = "rejected", "Rejected"
        CANCELLED = "cancelled", "Cancelled"
        EXPIRED = "expired", "Expired"

    HOLDING_STATES = (State.REQUESTED, State.APPROVED, State.ACTIVE)
    # What the engine sees: approved windows (upcoming or open) and active ones.
    SCHEDULED_STATES = (State.APPROVED, State.ACTIVE)
    # Whose windows are charged as they pass (a cancelled one only up to its cancellation).
    BILLED_STATES = (State.APPROVED, State.ACTIVE, State.COMPLETED)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="reservations"
    )
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="reservations"
    )
    gpu_class = models.ForeignKey(GpuClass, on_delete=models.PROTECT, related_name="+")
    pool = models.ForeignKey(NodePool, on_delete=models.PROTECT, related_name="reservations")
    # Whole GPUs, or with ``mig_profile`` instances of that profile (a node's MIG instances
    # and its whole GPUs are separate capacity).
    gpus = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    mig_profile = models.CharField(max_length=20, blank=True, validators=[mig_profile_validator])
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    # The occurrences of one weekly request share a series.
    series = models.UUIDField(null=True, blank=True, db_index=True)
    # How long before the window others' preemptible work is drained (None: the default).
    lead_time = models.DurationField(null=True, blank=True)
    state = models.CharField(max_length=12, choices=State.choices, default=State.REQUESTED)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    requested_at = models.DateTimeField(default=clock.wall)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_reason = models.CharField(max_length=500, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)
    # GPUs the pool can no longer give it (nodes removed or cordoned since it was accepted):
    # reservations accepted earlier keep theirs, and the engine holds only the rest.
    short_gpus = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["starts_at", "pool__name"]
        indexes = [
            models.Index(fields=["pool", "state", "starts_at"], name="reservation_pool_window")
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(ends_at__gt=models.F("starts_at")), name="reservation_ends_after_start"
            ),
            models.CheckConstraint(condition=Q(gpus__gte=1), name="reservation_gpus_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.organization.slug}: {self.gpus} {self.gpu_class} in {self.pool}"

    @property
    def is_holding(self) -> bool:
        """Requested, approved or active: its GPUs are held, and it may still be cancelled."""
        return self.state in self.HOLDING_STATES

    @property
    def unit(self) -> str:
        return f"{self.mig_profile} instances" if self.mig_profile else "GPUs"

    @property
    def held_until(self) -> datetime:
        """The end of its window, or of what was used of it when it was cancelled."""
        if self.state == self.State.CANCELLED and self.cancelled_at is not None:
            return max(self.starts_at, min(self.ends_at, self.cancelled_at))
        return self.ends_at

    @property
    def held_gpus(self) -> int:
        """The GPUs its pool can still give it."""
        return self.gpus - self.short_gpus
