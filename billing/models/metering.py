"""What the portal's GPUs were used for: usage intervals from placements, rated into billing
records per hour, and the reconciliations of the two."""

from decimal import Decimal

from django.db import models
from django.db.models import Q

from portal import clock
from scheduling.models import (
    GpuClass,
    PriorityTier,
    QuotaGrant,
    Reservation,
)
from tenants.models import Organization

from .commerce import CatalogItem, PriceVersion

# Keys a usage interval copies from its placement's workload, and a billing record from its
# interval or the catalog: constrained at their source, not again on each of millions of rows
# (the checks doubled the time to rate), nor indexed apart (queries go by organization and
# time, or by the unique keys).
COPIED = {"db_constraint": False, "db_index": False}

# An interval running, or closed with a part not yet rated: what a rating pass reads.
USAGE_UNRATED = (
    Q(ended_at__isnull=True)
    | Q(rated_until__lt=models.F("ended_at"))
    | Q(rated_until__isnull=True, ended_at__gt=models.F("started_at"))
)


class UsageInterval(models.Model):
    """What one placement held while it ran: derived from the placement row (the source of
    truth) by ``usage_intervals_sync``, one per placement, closed when the placement ends for
    any reason. ``amount`` is in the resource's unit: whole GPUs, milli-GPU of a share, or MIG
    instances."""

    # What quotas count, metering counts: the same resources.
    Resource = QuotaGrant.Resource

    id = models.BigAutoField(primary_key=True)
    # Written only by ``usage_intervals_sync``, from the placement in the statement that reads
    # it (and placements with usage are never deleted; PROTECT still guards a delete through
    # Django): unconstrained like the copied keys, the check at commit locked each placement
    # and cost a fifth of the sync's database CPU. The one-per-placement key stays.
    placement = models.OneToOneField(
        "scheduling.Placement", on_delete=models.PROTECT, related_name="+", db_constraint=False
    )
    organization = models.ForeignKey(
        Organization, on_delete=models.PROTECT, related_name="+", **COPIED
    )
    project = models.ForeignKey(
        "tenants.Project", on_delete=models.PROTECT, related_name="+", **COPIED
    )
    workload = models.ForeignKey(
        "scheduling.Workload", on_delete=models.PROTECT, related_name="+", **COPIED
    )
    pool = models.CharField(max_length=40)
    gpu_class = models.ForeignKey(GpuClass, on_delete=models.PROTECT, related_name="+", **COPIED)
    mig_profile = models.CharField(max_length=20, blank=True)
    resource = models.CharField(max_length=8, choices=Resource.choices)
    amount = models.PositiveIntegerField()
    tier = models.ForeignKey(PriorityTier, on_delete=models.PROTECT, related_name="+", **COPIED)
    # The reservation it ran inside, if its capacity covered it when it started: its use there
    # is not charged again.
    reservation = models.ForeignKey(
        Reservation,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        db_index=False,
    )
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    # Where its records end, set in the transaction that writes them: what rating skips.
    rated_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["started_at", "id"]
        # No index by organization: no reader goes there (usage and invoices read the
        # records), and each insert and each rating's update paid for it.
        indexes = [
            models.Index(
                fields=["ended_at"], condition=Q(ended_at__isnull=True), name="usage_open"
            ),
            models.Index(fields=["id"], condition=USAGE_UNRATED, name="usage_unrated"),
            models.Index(
                fields=["reservation"],
                condition=Q(reservation__isnull=False),
                name="usage_in_reservation",
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(ended_at__isnull=True) | Q(ended_at__gte=models.F("started_at")),
                name="usage_ends_after_start",
            ),
            models.CheckConstraint(condition=Q(amount__gte=1), name="usage_amount_positive"),
        ]

    def __str__(self) -> str:
        return (
            f"{self.organization}: {self.amount} {self.resource} from"
            f" {self.started_at:%Y-%m-%d %H:%M}"
        )


class BillingRecord(models.Model):
    """One interval's use within one hour (or the part of it under one price version), or one
    reservation's capacity within one hour, rated: the deterministic key (interval or
    reservation, start) is unique in the database, so rating twice, or again after a worker
    died half way, writes each record once."""

    class Charge(models.TextChoices):
        ON_DEMAND = "on_demand", "On-demand use"
        RESERVED_USE = "reserved_use", "Use inside a reservation (included)"
        RESERVATION = "reservation", "Reserved capacity"

    id = models.BigAutoField(primary_key=True)
    # Written only by rating, from the interval, in the statement that reads it (and intervals
    # are never deleted): unconstrained like the copied keys (the check cost a sixth of the
    # time to rate); the unique key below is what keeps a piece from being billed twice.
    interval = models.ForeignKey(
        UsageInterval,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="records",
        **COPIED,
    )
    # For reserved capacity: the reservation whose window this is.
    reservation = models.ForeignKey(
        Reservation,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        db_index=False,
    )
    organization = models.ForeignKey(
        Organization, on_delete=models.PROTECT, related_name="+", **COPIED
    )
    # None for a reservation held for the whole organization.
    project = models.ForeignKey(
        "tenants.Project",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        **COPIED,
    )
    gpu_class = models.ForeignKey(GpuClass, on_delete=models.PROTECT, related_name="+", **COPIED)
    mig_profile = models.CharField(max_length=20, blank=True)
    resource = models.CharField(max_length=8, choices=UsageInterval.Resource.choices)
    tier = models.ForeignKey(
        PriorityTier, null=True, blank=True, on_delete=models.PROTECT, related_name="+", **COPIED
    )
    charge = models.CharField(max_length=16, choices=Charge.choices, default=Charge.ON_DEMAND)
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    # The interval's amount times the seconds, to the microsecond: GPU-, milli-GPU- or
    # instance-seconds.
    quantity_seconds = models.DecimalField(max_digits=24, decimal_places=6)
    item = models.ForeignKey(
        CatalogItem, null=True, blank=True, on_delete=models.PROTECT, related_name="+", **COPIED
    )
    price_version = models.ForeignKey(
        PriceVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="+", **COPIED
    )
    # Per GPU-hour (a share pays its fraction) or per instance-hour; None: nothing priced it.
    unit_price = models.DecimalField(max_digits=14, decimal_places=4, null=True, blank=True)
    # To 10 places: invoices round once per line, half up to cents.
    cost = models.DecimalField(max_digits=24, decimal_places=10, default=Decimal(0))

    class Meta:
        ordering = ["starts_at", "id"]
        indexes = [models.Index(fields=["organization", "starts_at"], name="record_org_start")]
        constraints = [
            models.UniqueConstraint(
                fields=["interval", "starts_at"],
                condition=Q(interval__isnull=False),
                name="record_one_per_piece",
            ),
            models.UniqueConstraint(
                fields=["reservation", "starts_at"],
                condition=Q(interval__isnull=True),
                name="record_one_per_reserved_hour",
            ),
            models.CheckConstraint(
                condition=Q(interval__isnull=False) | Q(reservation__isnull=False),
                name="record_of_use_or_reservation",
            ),
            models.CheckConstraint(
                condition=Q(ends_at__gt=models.F("starts_at")), name="record_ends_after_start"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.organization} {self.starts_at:%Y-%m-%d %H:%M}: {self.cost}"


class UsageReconciliation(models.Model):
    """One comparison of the seconds placements held with the seconds billed over a period,
    per organization and resource; ``differences`` lists every pair that differs."""

    id = models.BigAutoField(primary_key=True)
    ran_at = models.DateTimeField(default=clock.wall)
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    organizations = models.PositiveIntegerField(default=0)
    placed_seconds = models.DecimalField(max_digits=28, decimal_places=6, default=Decimal(0))
    billed_seconds = models.DecimalField(max_digits=28, decimal_places=6, default=Decimal(0))
    differences = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-ran_at"]

    def __str__(self) -> str:
        return f"{self.starts_at:%Y-%m-%d %H:%M} to {self.ends_at:%Y-%m-%d %H:%M}"

    @property
    def balanced(self) -> bool:
        return not self.differences
