"""The operator's books: what a pool's GPU-hour costs the operator, versioned as prices are;
what each organization is shown of its own showback."""

import uuid
from decimal import Decimal

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q

from portal import clock
from scheduling.models import Node, NodePool
from tenants.models import Organization

NOT_NEGATIVE = [MinValueValidator(Decimal(0))]


class CostModel(models.Model):
    """What running a pool's GPUs (or one node's, which then overrides its pool's) costs from
    a moment on: the purchase price of a GPU amortised evenly over its lifetime, its power
    (measured where DCGM reports it, ``nameplate_watts`` otherwise) at a price per kWh, and a
    fixed overhead per node-hour (space, network, support). Versions are only ever added,
    never dated in the past, like prices."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    pool = models.ForeignKey(NodePool, on_delete=models.PROTECT, related_name="+")
    node = models.ForeignKey(
        Node, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    purchase_price_per_gpu = models.DecimalField(
        max_digits=14,
        decimal_places=2,
        validators=NOT_NEGATIVE,
        help_text="What one GPU cost, with its share of the server.",
    )
    lifetime_months = models.PositiveIntegerField(
        validators=[MinValueValidator(1)], help_text="Months (of 30 days) it is written off over."
    )
    nameplate_watts = models.PositiveIntegerField(
        help_text="Watts one GPU draws with its share of the server, where no reading says."
    )
    price_per_kwh = models.DecimalField(max_digits=10, decimal_places=4, validators=NOT_NEGATIVE)
    overhead_per_node_hour = models.DecimalField(
        max_digits=12, decimal_places=4, validators=NOT_NEGATIVE, default=Decimal(0)
    )
    effective_from = models.DateTimeField()
    created_at = models.DateTimeField(default=clock.wall)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["pool", "node", "effective_from"]
        constraints = [
            models.UniqueConstraint(
                fields=["pool", "effective_from"],
                condition=Q(node__isnull=True),
                name="cost_model_one_per_pool_and_moment",
                violation_error_message="The pool already has a cost model from that moment.",
            ),
            models.UniqueConstraint(
                fields=["node", "effective_from"],
                condition=Q(node__isnull=False),
                name="cost_model_one_per_node_and_moment",
                violation_error_message="The node already has a cost model from that moment.",
            ),
            models.CheckConstraint(
                condition=Q(
                    purchase_price_per_gpu__gte=0,
                    price_per_kwh__gte=0,
                    overhead_per_node_hour__gte=0,
                ),
                name="cost_model_not_negative",
                violation_error_message="Costs cannot be negative.",
            ),
            models.CheckConstraint(
                condition=Q(lifetime_months__gte=1),
                name="cost_model_lifetime_positive",
                violation_error_message="A lifetime is at least one month.",
            ),
        ]

    def __str__(self) -> str:
        scope = f"{self.pool}/{self.node}" if self.node_id else str(self.pool)
        return f"{scope}: cost from {self.effective_from:%Y-%m-%d %H:%M}"


class ShowbackSetting(models.Model):
    """What the operator shows one organization of its own showback (``showback``): nothing,
    its GPU-hours only (its use and its share of idle), or those and what they cost the
    operator. An organization without one gets ``PORTAL_BOOKS_SHOWBACK``."""

    class Level(models.TextChoices):
        OFF = "off", "Off"
        HOURS = "hours", "GPU-hours only"
        COST = "cost", "GPU-hours and cost"

    organization = models.OneToOneField(
        Organization, primary_key=True, on_delete=models.CASCADE, related_name="+"
    )
    level = models.CharField(max_length=5, choices=Level.choices)
    updated_at = models.DateTimeField(default=clock.wall)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["organization__slug"]
        constraints = [
            models.CheckConstraint(
                condition=Q(level__in=["off", "hours", "cost"]),
                name="showback_setting_level_known",
                violation_error_message="Showback is off, hours or cost.",
            )
        ]

    def __str__(self) -> str:
        return f"{self.organization}: showback {self.get_level_display().lower()}"
