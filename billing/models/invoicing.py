"""Invoices and their lines, their yearly numbers, and the credit that invoices take off."""

import uuid
from decimal import Decimal

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q

from portal import clock
from scheduling.models import GpuClass
from tenants.models import Organization


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
