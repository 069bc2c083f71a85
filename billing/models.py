"""What the portal sells and at what price: catalog items and their price versions.

Money is ``Decimal`` in the catalog's currency (``PORTAL_CURRENCY``); a unit price has four
decimal places (a GPU-second priced per hour needs them), amounts on invoices are rounded half
up to cents per line.
"""

import uuid
from decimal import Decimal

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from scheduling.models import GpuClass, PriorityTier, mig_profile_validator
from tenants.models import Organization, slug_validator


class CatalogItem(models.Model):
    """Something a tenant can order or use, with its terms."""

    class Kind(models.TextChoices):
        ON_DEMAND = "on_demand", "On-demand use (per GPU-hour)"
        RESERVATION = "reservation", "Reservation (per reserved GPU-hour)"
        QUOTA_PACKAGE = "quota_package", "Quota package (per month)"
        DEDICATED_POOL = "dedicated_pool", "Dedicated pool (per month)"

    UNITS = {
        Kind.ON_DEMAND: "GPU-hour",
        Kind.RESERVATION: "reserved GPU-hour",
        Kind.QUOTA_PACKAGE: "month",
        Kind.DEDICATED_POOL: "month",
    }

    slug = models.CharField(max_length=60, unique=True, validators=[slug_validator])
    name = models.CharField(max_length=120)
    description = models.TextField(blank=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    gpu_class = models.ForeignKey(GpuClass, on_delete=models.PROTECT, related_name="+")
    mig_profile = models.CharField(max_length=20, blank=True, validators=[mig_profile_validator])
    # On-demand items price one tier (e.g. preemptible at a discount); empty: every tier.
    tier = models.ForeignKey(
        PriorityTier, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # A quota package's size, in the grant's unit (GPUs or MIG instances).
    quantity = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    minimum_commitment_hours = models.PositiveIntegerField(default=0)
    # Cancelling a reservation is free until this many hours before its window, then costs
    # this share of its price.
    free_cancellation_hours = models.PositiveIntegerField(default=24)
    cancellation_charge_percent = models.PositiveSmallIntegerField(
        default=50, validators=[MinValueValidator(0)]
    )
    # Orders whose total is at most this are approved without an operator (None: never).
    auto_approve_up_to = models.DecimalField(max_digits=14, decimal_places=2, null=True, blank=True)
    # Every organization sees it, or only those listed.
    public = models.BooleanField(default=True)
    organizations = models.ManyToManyField(Organization, blank=True, related_name="+")
    active_from = models.DateTimeField(default=timezone.now)
    active_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["gpu_class__name", "kind", "slug"]
        constraints = [
            models.CheckConstraint(
                condition=Q(cancellation_charge_percent__lte=100), name="catalog_charge_percent"
            ),
            models.CheckConstraint(
                condition=Q(active_until__isnull=True)
                | Q(active_until__gt=models.F("active_from")),
                name="catalog_active_window",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def unit(self) -> str:
        return self.UNITS[self.kind]


class PriceVersion(models.Model):
    """A unit price from a moment on. Versions are only ever added, never dated in the past:
    what was charged stays what was in force."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    item = models.ForeignKey(CatalogItem, on_delete=models.CASCADE, related_name="prices")
    unit_price = models.DecimalField(
        max_digits=14, decimal_places=4, validators=[MinValueValidator(Decimal(0))]
    )
    effective_from = models.DateTimeField()
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["item", "effective_from"]
        constraints = [
            models.UniqueConstraint(
                fields=["item", "effective_from"], name="price_version_one_per_moment"
            ),
            models.CheckConstraint(
                condition=Q(unit_price__gte=0), name="price_version_not_negative"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.item.slug}: {self.unit_price} from {self.effective_from:%Y-%m-%d %H:%M}"
