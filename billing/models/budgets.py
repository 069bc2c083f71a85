"""Budgets: monthly spending limits and the thresholds their spend crossed."""

import uuid
from decimal import Decimal

from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q

from portal import clock
from tenants.models import Organization


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
