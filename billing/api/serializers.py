import re
from decimal import Decimal

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from billing.models import (
    Budget,
    CancellationCharge,
    CatalogItem,
    ContractCredit,
    Credit,
    Invoice,
    InvoiceLine,
    Order,
    UsageInterval,
)
from billing.services import OrderRequest
from portal.api.serializers import AwareDateTimeField, InputSerializer
from portal.bounds import FIRST_YEAR, LAST_YEAR, date_error
from tenants.models import SLUG_PATTERN


@extend_schema_field(OpenApiTypes.STR)
class CurrencyField(serializers.Field):
    """The catalog's one currency (``PORTAL_CURRENCY``), beside each amount."""

    def __init__(self, **kwargs):
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, value) -> str:
        return settings.PORTAL_CURRENCY


class CatalogItemOutput(serializers.ModelSerializer):
    gpu_class = serializers.CharField(source="gpu_class.name", read_only=True)
    tier = serializers.CharField(source="tier.name", default=None, read_only=True, allow_null=True)
    unit = serializers.CharField(read_only=True)
    currency = CurrencyField()
    unit_price = serializers.DecimalField(
        max_digits=14, decimal_places=4, read_only=True, allow_null=True
    )
    price_from = serializers.DateTimeField(read_only=True, allow_null=True)
    next_price = serializers.DecimalField(
        max_digits=14, decimal_places=4, read_only=True, allow_null=True
    )
    next_price_from = serializers.DateTimeField(read_only=True, allow_null=True)
    orderable = serializers.BooleanField(
        read_only=True, help_text="False for on-demand use: billed as it is used, not ordered."
    )

    class Meta:
        model = CatalogItem
        fields = [
            "slug",
            "name",
            "description",
            "kind",
            "gpu_class",
            "mig_profile",
            "tier",
            "quantity",
            "unit",
            "orderable",
            "currency",
            "unit_price",
            "price_from",
            "next_price",
            "next_price_from",
            "minimum_commitment_hours",
            "maximum_period_hours",
            "free_cancellation_hours",
            "cancellation_charge_percent",
            "auto_approve_up_to",
            "active_from",
            "active_until",
        ]


class OrderOutput(serializers.ModelSerializer):
    item = serializers.CharField(source="item.slug", read_only=True)
    project = serializers.CharField(
        source="project.slug", default=None, read_only=True, allow_null=True
    )
    currency = CurrencyField()
    created_by = serializers.EmailField(
        source="created_by.email", default=None, read_only=True, allow_null=True
    )
    unit_price = serializers.DecimalField(
        max_digits=14,
        decimal_places=4,
        read_only=True,
        allow_null=True,
        help_text="Null for members and viewers: money is for owners and admins.",
    )
    total = serializers.DecimalField(
        max_digits=16,
        decimal_places=2,
        read_only=True,
        allow_null=True,
        help_text="Null for members and viewers: money is for owners and admins.",
    )

    # What only those who may see money get (the view says so in the context's "money").
    MONEY_FIELDS = ("unit_price", "total")

    class Meta:
        model = Order
        fields = [
            "id",
            "item",
            "project",
            "quantity",
            "starts_at",
            "ends_at",
            "pool",
            "state",
            "currency",
            "unit_price",
            "total",
            "created_by",
            "created_at",
            "submitted_at",
            "decided_at",
            "decision_reason",
            "fulfilled_at",
            "failure_reason",
            "fulfilled_objects",
        ]

    def to_representation(self, order: Order) -> dict:
        data = super().to_representation(order)
        if not self.context.get("money", False):
            data.update(dict.fromkeys(self.MONEY_FIELDS))
        return data


class CancellationChargeOutput(serializers.ModelSerializer):
    reservation = serializers.UUIDField(source="reservation_id", read_only=True)
    order = serializers.UUIDField(source="order_id", default=None, read_only=True, allow_null=True)
    item = serializers.CharField(source="item.slug", default=None, read_only=True, allow_null=True)
    currency = CurrencyField()
    recorded = serializers.SerializerMethodField(
        help_text="False for a quote: what cancelling costs now, or a charge not yet recorded."
    )

    class Meta:
        model = CancellationCharge
        fields = [
            "reservation",
            "order",
            "item",
            "cancelled_at",
            "free_until",
            "remaining_value",
            "percent",
            "amount",
            "currency",
            "explanation",
            "recorded",
        ]

    def get_recorded(self, charge: CancellationCharge) -> bool:
        return not charge._state.adding


class OrderInput(InputSerializer):
    item = serializers.RegexField(SLUG_PATTERN, max_length=60)
    quantity = serializers.IntegerField(min_value=1, max_value=100_000)
    starts_at = AwareDateTimeField()
    ends_at = AwareDateTimeField()
    project = serializers.RegexField(SLUG_PATTERN, max_length=40, required=False, allow_null=True)
    pool = serializers.RegexField(SLUG_PATTERN, max_length=40, required=False, allow_null=True)
    draft = serializers.BooleanField(default=False, help_text="Keep it as a draft to submit later.")

    def as_request(self) -> OrderRequest:
        data = dict(self.validated_data)
        data.pop("draft")
        return OrderRequest(**data)


class InvoiceLineOutput(serializers.ModelSerializer):
    project = serializers.CharField(
        source="project.slug", default=None, read_only=True, allow_null=True
    )
    gpu_class = serializers.CharField(
        source="gpu_class.name", default=None, read_only=True, allow_null=True
    )

    class Meta:
        model = InvoiceLine
        fields = [
            "id",
            "description",
            "project",
            "gpu_class",
            "mig_profile",
            "resource",
            "charge",
            "hours",
            "unit_price",
            "amount",
        ]


class InvoiceOutput(serializers.ModelSerializer):
    corrects = serializers.CharField(
        source="corrects.number", default=None, read_only=True, allow_null=True
    )
    lines = InvoiceLineOutput(many=True, read_only=True)

    class Meta:
        model = Invoice
        fields = [
            "id",
            "number",
            "state",
            "corrects",
            "month",
            "period_start",
            "period_end",
            "updated_at",
            "currency",
            "lines",
            "subtotal",
            "credits",
            "tax_rate",
            "tax",
            "total",
            "reason",
            "issued_at",
            "paid_at",
            "voided_at",
        ]


class UsageIntervalOutput(serializers.ModelSerializer):
    workload = serializers.CharField(source="workload.name", read_only=True)
    workload_id = serializers.UUIDField(read_only=True)
    project = serializers.CharField(source="project.slug", read_only=True)
    gpu_class = serializers.CharField(source="gpu_class.name", read_only=True)
    tier = serializers.CharField(source="tier.name", read_only=True)
    billed_seconds = serializers.DecimalField(
        max_digits=24,
        decimal_places=6,
        read_only=True,
        help_text="The interval's amount times the seconds this line bills of it.",
    )

    class Meta:
        model = UsageInterval
        fields = [
            "id",
            "workload",
            "workload_id",
            "project",
            "pool",
            "gpu_class",
            "mig_profile",
            "resource",
            "amount",
            "tier",
            "started_at",
            "ended_at",
            "billed_seconds",
        ]


class BudgetOutput(serializers.ModelSerializer):
    project = serializers.CharField(
        source="project.slug", default=None, read_only=True, allow_null=True
    )
    currency = CurrencyField()
    spent = serializers.DecimalField(
        max_digits=16,
        decimal_places=2,
        read_only=True,
        help_text="This month (in the organization's time zone), as rated.",
    )

    class Meta:
        model = Budget
        fields = [
            "id",
            "project",
            "monthly_amount",
            "currency",
            "thresholds",
            "hard_stop",
            "spent",
            "updated_at",
        ]


# A positive amount of money as a request sends it: a string of digits, at most two decimals,
# not zero. The schema's pattern, and what the field takes: no JSON number (a float on the
# way), no exponent ("1e5"), sign or surrounding space (" 5", "+5").
MONEY_PATTERN = r"^(?!0*(?:\.0*)?$)\d{1,12}(?:\.\d{1,2})?$"


@extend_schema_field({"type": "string", "format": "decimal", "pattern": MONEY_PATTERN})
class MoneyInputField(serializers.DecimalField):
    """A positive amount of money in a request, exactly as MONEY_PATTERN spells it (DRF's own
    schema lets an empty string and 0 through its pattern, and its field takes numbers,
    exponents, signs and spaces)."""

    default_error_messages = {
        "money": "An amount as a string of digits with at most two decimals, such as"
        ' "1500.00", above zero.',
    }

    def __init__(self, **kwargs):
        super().__init__(max_digits=14, decimal_places=2, min_value=Decimal("0.01"), **kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, str) or not re.fullmatch(MONEY_PATTERN, data):
            self.fail("money")
        return super().to_internal_value(data)


class BudgetInput(InputSerializer):
    project = serializers.RegexField(SLUG_PATTERN, max_length=40, required=False, allow_null=True)
    monthly_amount = MoneyInputField()
    thresholds = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=1000),
        min_length=1,
        max_length=10,
        default=[50, 80, 100],
        help_text="Percentages of the amount whose crossing is mailed.",
    )
    hard_stop = serializers.BooleanField(
        default=False, help_text="Refuse new submissions once the month's budget is spent."
    )


RESOURCE_HELP = (
    "What was used: gpus (whole GPUs), shared (GPU shares) or mig (MIG instances of mig_profile)."
)
GPU_HOURS_HELP = (
    "GPU-hours of whole GPUs or GPU shares (a share counts its fraction of a GPU); null for"
    " MIG use, which is counted in mig_instance_hours."
)
MIG_HOURS_HELP = "MIG instance-hours of mig_profile; null unless resource is mig."


class UsageTotalOutput(serializers.Serializer):
    gpu_class = serializers.CharField()
    mig_profile = serializers.CharField()
    resource = serializers.ChoiceField(
        choices=UsageInterval.Resource.choices, help_text=RESOURCE_HELP
    )
    gpu_hours = serializers.DecimalField(
        max_digits=18, decimal_places=4, allow_null=True, help_text=GPU_HOURS_HELP
    )
    mig_instance_hours = serializers.DecimalField(
        max_digits=18, decimal_places=4, allow_null=True, help_text=MIG_HOURS_HELP
    )
    cost = serializers.DecimalField(max_digits=16, decimal_places=2)


class UsageRowOutput(UsageTotalOutput):
    day = serializers.DateField()
    tier = serializers.CharField()
    project = serializers.CharField()


class UsageCreditOutput(serializers.Serializer):
    kind = serializers.ChoiceField(
        choices=ContractCredit.Kind.choices,
        help_text="lost_work_credit: GPU-seconds an eviction lost since the last checkpoint;"
        " lending_credit: reserved idle GPUs others' work ran on.",
    )
    project = serializers.CharField(source="project.slug", default=None, allow_null=True)
    gpu_class = serializers.CharField(source="gpu_class.name")
    mig_profile = serializers.CharField()
    resource = serializers.ChoiceField(
        choices=UsageInterval.Resource.choices, help_text=RESOURCE_HELP
    )
    description = serializers.CharField()
    hours = serializers.DecimalField(
        max_digits=18,
        decimal_places=4,
        help_text="GPU-hours (a share's fraction counted), or MIG instance-hours, credited.",
    )
    unit_price = serializers.DecimalField(
        max_digits=14,
        decimal_places=4,
        allow_null=True,
        help_text="Per hour as credited (null: the pieces were billed at several prices).",
    )
    amount = serializers.DecimalField(
        max_digits=16, decimal_places=2, help_text="What it takes off the invoice."
    )


class UsageOutput(serializers.Serializer):
    currency = CurrencyField()
    rows = UsageRowOutput(many=True)
    totals = UsageTotalOutput(
        many=True,
        help_text="Per GPU class, MIG profile and resource over the period, each in its unit.",
    )
    gpu_hours = serializers.DecimalField(
        max_digits=18,
        decimal_places=4,
        help_text="GPU-hours of whole GPUs and GPU shares of every class. MIG instance-hours"
        " are not in it: totals has them per class and profile.",
    )
    cost = serializers.DecimalField(max_digits=16, decimal_places=2)
    month_to_date = serializers.DecimalField(max_digits=16, decimal_places=2, allow_null=True)
    forecast = serializers.DecimalField(
        max_digits=16,
        decimal_places=2,
        allow_null=True,
        help_text="This month's cost at the run rate so far (only for the current month).",
    )
    credits = UsageCreditOutput(
        many=True,
        help_text="The preemption contract's credits placed in the period: one per eviction"
        " of credited work, one per reservation that lent idle GPUs.",
    )
    credited = serializers.DecimalField(
        max_digits=16,
        decimal_places=2,
        help_text="What the credits take off in all: cost is before them, month_to_date (the"
        " draft's subtotal) after them.",
    )


def _bounded_day(day):
    error = date_error(day)
    if error:
        raise serializers.ValidationError(error)
    return day


class UsageQuery(serializers.Serializer):
    start = serializers.DateField(
        required=False,
        help_text=f"First day (in the organization's time zone), in the years {FIRST_YEAR} to"
        f" {LAST_YEAR};"
        " default: this month's first.",
    )
    end = serializers.DateField(
        required=False,
        help_text=f"Last day, included, in the years {FIRST_YEAR} to {LAST_YEAR}; default: this"
        " month's last.",
    )

    def to_internal_value(self, data):
        # DRF reads a blank query parameter as absent; the schema says a date.
        blank = [name for name in self.fields if data.get(name, None) == ""]
        if blank:
            raise serializers.ValidationError(
                {name: ["A date (YYYY-MM-DD) is required."] for name in blank}
            )
        return super().to_internal_value(data)

    def validate_start(self, day):
        return _bounded_day(day)

    def validate_end(self, day):
        return _bounded_day(day)

    def validate(self, data):
        if data.get("start") and data.get("end") and data["end"] < data["start"]:
            raise serializers.ValidationError({"end": ["The period ends before it starts."]})
        return data


class CreditOutput(serializers.ModelSerializer):
    currency = CurrencyField()

    class Meta:
        model = Credit
        fields = ["id", "amount", "currency", "reason", "granted_at"]


class CreditsOutput(serializers.Serializer):
    balance = serializers.DecimalField(
        max_digits=16,
        decimal_places=2,
        help_text="Granted and not yet taken off an issued invoice; drafts show what they"
        " would take.",
    )
    currency = serializers.CharField()
    grants = CreditOutput(many=True)
