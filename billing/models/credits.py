"""Credits the preemption contract owes: for work lost to an eviction, and for a reservation's
idle GPUs lent to others' work. Each row is one piece of one credit under a deterministic key
(unique in the database), so computing them again, or after a worker died half way, writes
each piece once."""

from decimal import Decimal

from django.db import models
from django.db.models import Q

from scheduling.models import Eviction, GpuClass, Reservation
from tenants.models import Organization

from .metering import COPIED, UsageInterval


class ContractCredit(models.Model):
    """A lost-work piece: the part of one billing record of an evicted workload's interval
    between its last checkpoint (or start) and the eviction, at the price that record billed
    (key: eviction, interval, piece start). A lending piece: one hour (or the part of one
    inside the window) of a reservation, with the GPU-seconds others' work ran on its idle
    GPUs, at a share of the reservation's price (key: reservation, hour start)."""

    class Kind(models.TextChoices):
        LOST_WORK = "lost_work_credit", "Credit for work lost to an eviction"
        LENDING = "lending_credit", "Credit for reserved GPUs lent to others"

    id = models.BigAutoField(primary_key=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    organization = models.ForeignKey(Organization, on_delete=models.PROTECT, related_name="+")
    project = models.ForeignKey(
        "tenants.Project", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    eviction = models.ForeignKey(
        Eviction, null=True, blank=True, on_delete=models.PROTECT, related_name="+", db_index=False
    )
    # The lost-work piece's interval (its record's key is this interval and the piece's start).
    interval = models.ForeignKey(
        UsageInterval, null=True, blank=True, on_delete=models.PROTECT, related_name="+", **COPIED
    )
    reservation = models.ForeignKey(
        Reservation,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        db_index=False,
    )
    gpu_class = models.ForeignKey(GpuClass, on_delete=models.PROTECT, related_name="+")
    mig_profile = models.CharField(max_length=20, blank=True)
    resource = models.CharField(max_length=8, choices=UsageInterval.Resource.choices)
    # Which invoice it is on: the one whose period holds it (the eviction's time; the hour's).
    at = models.DateTimeField()
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    # Resource-seconds credited (GPU-, milli-GPU- or instance-seconds; lent: GPU- or
    # instance-seconds), exact: lending splits milli-GPU-microseconds, hence nine places.
    quantity_seconds = models.DecimalField(max_digits=24, decimal_places=9)
    # Per GPU-hour (or instance-hour) as credited.
    unit_price = models.DecimalField(max_digits=14, decimal_places=4)
    # Positive, to 10 places; its invoice line is negative, rounded once.
    amount = models.DecimalField(max_digits=24, decimal_places=10, default=Decimal(0))

    class Meta:
        ordering = ["at", "id"]
        indexes = [models.Index(fields=["organization", "at"], name="contract_credit_org_at")]
        constraints = [
            models.UniqueConstraint(
                fields=["eviction", "interval", "starts_at"],
                condition=Q(kind="lost_work_credit"),
                name="contract_credit_one_per_lost_piece",
            ),
            models.UniqueConstraint(
                fields=["reservation", "starts_at"],
                condition=Q(kind="lending_credit"),
                name="contract_credit_one_per_lent_hour",
            ),
            models.CheckConstraint(
                condition=(
                    Q(kind="lost_work_credit", eviction__isnull=False, interval__isnull=False)
                    | Q(kind="lending_credit", reservation__isnull=False)
                ),
                name="contract_credit_keyed",
            ),
            models.CheckConstraint(
                condition=Q(ends_at__gt=models.F("starts_at")), name="contract_credit_ends_after"
            ),
            models.CheckConstraint(
                condition=Q(quantity_seconds__gte=0, amount__gte=0),
                name="contract_credit_not_negative",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.organization} {self.get_kind_display()} {self.at:%Y-%m-%d %H:%M}"
