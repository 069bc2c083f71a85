"""What the portal sells and at what price: catalog items and their price versions; the
orders of them, and what cancelling a reservation cost."""

import uuid
from decimal import Decimal

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q

from portal import clock
from scheduling.models import (
    GpuClass,
    PriorityTier,
    Reservation,
    mig_profile_validator,
)
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
    # What an order makes automatically once approved: reserved GPUs, a grant for the period,
    # a pool's reservation. On-demand use is billed as it is used: nothing to order.
    ORDERABLE = (Kind.RESERVATION, Kind.QUOTA_PACKAGE, Kind.DEDICATED_POOL)

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
    # The longest period one order may cover (None: no limit).
    maximum_period_hours = models.PositiveIntegerField(null=True, blank=True)
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
    active_from = models.DateTimeField(default=clock.wall)
    active_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["gpu_class__name", "kind", "slug"]
        constraints = [
            models.CheckConstraint(
                condition=Q(cancellation_charge_percent__lte=100),
                name="catalog_charge_percent",
                violation_error_message="A cancellation charge is at most 100 percent.",
            ),
            models.CheckConstraint(
                condition=Q(active_until__isnull=True)
                | Q(active_until__gt=models.F("active_from")),
                name="catalog_active_window",
                violation_error_message="An item stops being offered after it starts: active"
                " until must be later than active from.",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def unit(self) -> str:
        return self.UNITS[self.kind]

    @property
    def orderable(self) -> bool:
        return self.kind in self.ORDERABLE


class PriceVersion(models.Model):
    """A unit price from a moment on, the list price or one organization's. Versions are only
    ever added, never dated in the past: what was charged stays what was in force."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    item = models.ForeignKey(CatalogItem, on_delete=models.CASCADE, related_name="prices")
    # A price negotiated with one organization; it replaces the list price (None) for it.
    organization = models.ForeignKey(
        Organization, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    unit_price = models.DecimalField(
        max_digits=14, decimal_places=4, validators=[MinValueValidator(Decimal(0))]
    )
    effective_from = models.DateTimeField()
    created_at = models.DateTimeField(default=clock.wall)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["item", "effective_from"]
        constraints = [
            models.UniqueConstraint(
                fields=["item", "effective_from"],
                condition=Q(organization__isnull=True),
                name="price_version_one_per_moment",
                violation_error_message="The item already has a list price from that moment.",
            ),
            models.UniqueConstraint(
                fields=["item", "organization", "effective_from"],
                condition=Q(organization__isnull=False),
                name="price_version_one_per_organization_and_moment",
                violation_error_message="The item already has a price for this organization"
                " from that moment.",
            ),
            models.CheckConstraint(
                condition=Q(unit_price__gte=0),
                name="price_version_not_negative",
                violation_error_message="A unit price cannot be negative.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.item.slug}: {self.unit_price} from {self.effective_from:%Y-%m-%d %H:%M}"


class Order(models.Model):
    """An organization's order of a catalog item: its quantity and period, and the price
    version in force when it was submitted (what billing charges, not today's price)."""

    class State(models.TextChoices):
        DRAFT = "draft", "Draft"
        SUBMITTED = "submitted", "Submitted"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        FULFILLING = "fulfilling", "Fulfilling"
        FULFILLED = "fulfilled", "Fulfilled"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    # Before fulfilment begins, the organization may still cancel.
    CANCELLABLE = (State.DRAFT, State.SUBMITTED, State.APPROVED)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    project = models.ForeignKey(
        "tenants.Project", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    item = models.ForeignKey(CatalogItem, on_delete=models.PROTECT, related_name="orders")
    # Reserved GPUs, or packages.
    quantity = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    pool = models.CharField(max_length=40, blank=True)
    state = models.CharField(max_length=12, choices=State.choices, default=State.DRAFT)
    price_version = models.ForeignKey(
        PriceVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    unit_price = models.DecimalField(max_digits=14, decimal_places=4, null=True, blank=True)
    # unit price x quantity x units of the period, rounded half up to cents.
    total = models.DecimalField(max_digits=16, decimal_places=2, null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=clock.wall)
    submitted_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_reason = models.CharField(max_length=500, blank=True)
    fulfilled_at = models.DateTimeField(null=True, blank=True)
    failure_reason = models.CharField(max_length=500, blank=True)
    # What fulfilment made: written in the transaction that makes it, so made once.
    fulfilled_objects = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(ends_at__gt=models.F("starts_at")), name="order_ends_after_start"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.organization.slug}: {self.quantity} of {self.item}"

    @property
    def is_cancellable(self) -> bool:
        return self.state in self.CANCELLABLE


class CancellationCharge(models.Model):
    """What cancelling one reservation cost by the terms it was bought under: free until the
    item's ``free_cancellation_hours`` before the window, then ``cancellation_charge_percent``
    of the price of what was left of it. One per cancelled reservation (0 when free or when no
    item priced it), which invoices read."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    reservation = models.OneToOneField(Reservation, on_delete=models.PROTECT, related_name="+")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    # The order that bought the reservation, if one did (its price applies, not the list's).
    order = models.ForeignKey(
        Order, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    item = models.ForeignKey(
        CatalogItem, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    cancelled_at = models.DateTimeField()
    free_until = models.DateTimeField(null=True, blank=True)
    # The price of what was left of the reservation when it was cancelled, and the share of it
    # charged.
    remaining_value = models.DecimalField(max_digits=16, decimal_places=2, default=Decimal(0))
    percent = models.PositiveSmallIntegerField(default=0)
    amount = models.DecimalField(max_digits=16, decimal_places=2)
    explanation = models.CharField(max_length=300)
    created_at = models.DateTimeField(default=clock.wall)

    class Meta:
        ordering = ["-cancelled_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(amount__gte=0) & Q(amount__lte=models.F("remaining_value")),
                name="cancellation_charge_within_value",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.organization}: {self.amount} for cancelling {self.reservation}"
