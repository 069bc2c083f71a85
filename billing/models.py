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

from portal import clock
from scheduling.models import (
    GpuClass,
    PriorityTier,
    QuotaGrant,
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
    placement = models.OneToOneField(
        "scheduling.Placement", on_delete=models.PROTECT, related_name="+"
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
        indexes = [
            models.Index(fields=["organization", "started_at"], name="usage_org_start"),
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


class InvoiceCounter(models.Model):
    """The last invoice number given in a year: its row, locked while an invoice is issued,
    makes numbers sequential without gaps, also when two are issued at once."""

    year = models.PositiveIntegerField(primary_key=True)
    last = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.year}: {self.last}"


class Invoice(models.Model):
    """An organization's invoice for a month, or a credit note correcting an issued one.
    Its period is the month in the organization's time zone when the month was first drafted
    (a later change of zone applies from the next month, which starts where this one ends);
    one invoice per organization and month (the database refuses a second). Issued, it never
    changes but for being paid or voided: the services refuse, and so does the database
    (triggers)."""

    class State(models.TextChoices):
        DRAFT = "draft", "Draft"
        ISSUED = "issued", "Issued"
        PAID = "paid", "Paid"
        VOID = "void", "Void"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.PROTECT, related_name="+")
    # The first day of the month it invoices (a credit note: its invoice's month).
    month = models.DateField()
    period_start = models.DateTimeField()
    period_end = models.DateTimeField()
    state = models.CharField(max_length=8, choices=State.choices, default=State.DRAFT)
    # "2026-000042": the year of issue and a number without gaps in it.
    number = models.CharField(max_length=16, unique=True, null=True, blank=True)
    # The issued invoice a credit note corrects (None: an invoice).
    corrects = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="credit_notes"
    )
    currency = models.CharField(max_length=3)
    subtotal = models.DecimalField(max_digits=16, decimal_places=2, default=Decimal(0))
    # The organization's credit taken off the subtotal (before tax).
    credits = models.DecimalField(max_digits=16, decimal_places=2, default=Decimal(0))
    tax_rate = models.DecimalField(max_digits=5, decimal_places=4, default=Decimal(0))
    tax = models.DecimalField(max_digits=16, decimal_places=2, default=Decimal(0))
    total = models.DecimalField(max_digits=16, decimal_places=2, default=Decimal(0))
    reason = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=clock.wall)
    # When its lines were last built from what was rated (a draft's figures are as of then).
    updated_at = models.DateTimeField(default=clock.wall)
    issued_at = models.DateTimeField(null=True, blank=True)
    paid_at = models.DateTimeField(null=True, blank=True)
    voided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-period_start", "number"]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "month"],
                condition=Q(corrects__isnull=True) & ~Q(state="void"),
                name="invoice_one_per_month",
                violation_error_message="The organization already has an invoice for the month.",
            ),
            models.CheckConstraint(
                condition=Q(state="draft") | Q(number__isnull=False), name="invoice_issued_numbered"
            ),
        ]

    def __str__(self) -> str:
        return self.number or f"draft {self.organization} {self.month:%Y-%m}"

    @property
    def is_credit_note(self) -> bool:
        return self.corrects_id is not None


class InvoiceLine(models.Model):
    """A project's use of a class (or MIG profile) under one charge type and unit price over
    the invoice's period: the sum of its billing records, rounded half up to cents once."""

    id = models.BigAutoField(primary_key=True)
    invoice = models.ForeignKey(Invoice, on_delete=models.CASCADE, related_name="lines")
    project = models.ForeignKey(
        "tenants.Project", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    gpu_class = models.ForeignKey(
        GpuClass, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    mig_profile = models.CharField(max_length=20, blank=True)
    resource = models.CharField(max_length=8, blank=True)
    charge = models.CharField(max_length=16)
    description = models.CharField(max_length=300)
    # GPU-hours (a share's fraction counted), or MIG instance-hours.
    hours = models.DecimalField(max_digits=18, decimal_places=4, default=Decimal(0))
    unit_price = models.DecimalField(max_digits=14, decimal_places=4, null=True, blank=True)
    amount = models.DecimalField(max_digits=16, decimal_places=2)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.description


def default_thresholds() -> list[int]:
    return [50, 80, 100]


class Budget(models.Model):
    """A monthly spending limit of an organization, or of one of its projects: its managers
    are mailed once per threshold and month the spend crosses, and with ``hard_stop`` new
    submissions are refused once it is all spent."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    project = models.ForeignKey(
        "tenants.Project", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    monthly_amount = models.DecimalField(
        max_digits=14, decimal_places=2, validators=[MinValueValidator(Decimal("0.01"))]
    )
    # Percentages of the amount whose crossing is mailed.
    thresholds = models.JSONField(default=default_thresholds)
    hard_stop = models.BooleanField(default=False)
    updated_at = models.DateTimeField(default=clock.wall)

    class Meta:
        ordering = ["organization", "project"]
        constraints = [
            models.UniqueConstraint(
                fields=["organization"],
                condition=Q(project__isnull=True),
                name="budget_one_per_organization",
            ),
            models.UniqueConstraint(
                fields=["organization", "project"],
                condition=Q(project__isnull=False),
                name="budget_one_per_project",
            ),
            models.CheckConstraint(
                condition=Q(monthly_amount__gt=0), name="budget_amount_positive"
            ),
        ]

    def __str__(self) -> str:
        scope = self.project.slug if self.project_id else "whole organization"
        return f"{self.organization.slug} ({scope}): {self.monthly_amount} a month"


class Credit(models.Model):
    """Money an operator grants an organization (a promotion, a service credit for an outage):
    taken off its invoices' subtotals before tax, as they are issued, until spent. A grant is
    never changed or deleted: what was applied stays explained."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.PROTECT, related_name="+")
    amount = models.DecimalField(
        max_digits=16, decimal_places=2, validators=[MinValueValidator(Decimal("0.01"))]
    )
    reason = models.CharField(max_length=200)
    granted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    granted_at = models.DateTimeField(default=clock.wall)

    class Meta:
        ordering = ["-granted_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(amount__gt=0),
                name="credit_positive",
                violation_error_message="A credit is an amount above zero.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.organization}: {self.amount} ({self.reason})"


class BudgetAlert(models.Model):
    """A threshold a budget's spend crossed in a month: one each, mailed once."""

    id = models.BigAutoField(primary_key=True)
    budget = models.ForeignKey(Budget, on_delete=models.CASCADE, related_name="alerts")
    period_start = models.DateTimeField()
    threshold = models.PositiveSmallIntegerField()
    spend = models.DecimalField(max_digits=16, decimal_places=2)
    created_at = models.DateTimeField(default=clock.wall)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["budget", "period_start", "threshold"], name="budget_alert_once"
            )
        ]

    def __str__(self) -> str:
        return f"{self.budget}: {self.threshold}% in {self.period_start:%Y-%m}"
