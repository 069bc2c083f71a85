"""What the operator API of billing reads and takes: every organization's orders, invoices and
credit notes, and credit grants."""

from decimal import Decimal

from rest_framework import serializers

from portal.api.serializers import AwareDateTimeField, InputSerializer
from tenants.models import SLUG_PATTERN

from ..exports import pool_books_json
from ..models import ShowbackSetting
from .serializers import CreditOutput, InvoiceOutput, MoneyInputField, OrderOutput


class OperatorOrderOutput(OrderOutput):
    organization = serializers.CharField(source="organization.slug", read_only=True)

    class Meta(OrderOutput.Meta):
        fields = ["organization", *OrderOutput.Meta.fields]


class OperatorInvoiceOutput(InvoiceOutput):
    organization = serializers.CharField(source="organization.slug", read_only=True)

    class Meta(InvoiceOutput.Meta):
        fields = ["organization", *InvoiceOutput.Meta.fields]


class OperatorCreditOutput(CreditOutput):
    organization = serializers.CharField(source="organization.slug", read_only=True)
    granted_by = serializers.EmailField(
        source="granted_by.email", default=None, read_only=True, allow_null=True
    )

    class Meta(CreditOutput.Meta):
        fields = ["organization", *CreditOutput.Meta.fields, "granted_by"]


class CreditNoteInput(InputSerializer):
    amount = MoneyInputField(help_text="Credited before tax, at most what the invoice leaves.")
    reason = serializers.CharField(max_length=500, help_text="What the credit note corrects.")


class CreditGrantInput(InputSerializer):
    organization = serializers.RegexField(SLUG_PATTERN, max_length=40)
    amount = MoneyInputField()
    reason = serializers.CharField(max_length=200)


class CostModelOutput(serializers.Serializer):
    id = serializers.UUIDField()
    pool = serializers.CharField(source="pool.name")
    node = serializers.CharField(source="node.name", default=None, allow_null=True)
    purchase_price_per_gpu = serializers.DecimalField(max_digits=14, decimal_places=2)
    lifetime_months = serializers.IntegerField()
    nameplate_watts = serializers.IntegerField()
    price_per_kwh = serializers.DecimalField(max_digits=10, decimal_places=4)
    overhead_per_node_hour = serializers.DecimalField(max_digits=12, decimal_places=4)
    effective_from = serializers.DateTimeField()
    created_by = serializers.EmailField(source="created_by.email", default=None, allow_null=True)


class CostModelInput(InputSerializer):
    pool = serializers.RegexField(SLUG_PATTERN, max_length=40)
    node = serializers.CharField(
        max_length=253, required=False, help_text="One node of the pool; unsaid: the whole pool."
    )
    purchase_price_per_gpu = MoneyInputField(help_text="One GPU with its share of the server.")
    lifetime_months = serializers.IntegerField(min_value=1, max_value=240)
    nameplate_watts = serializers.IntegerField(
        min_value=0, max_value=100_000, help_text="Per GPU, with its share of the server."
    )
    price_per_kwh = serializers.DecimalField(
        max_digits=10, decimal_places=4, min_value=Decimal(0), coerce_to_string=True
    )
    overhead_per_node_hour = serializers.DecimalField(
        max_digits=12, decimal_places=4, min_value=Decimal(0), required=False
    )
    effective_from = AwareDateTimeField(required=False, help_text="Unsaid: from now.")


class PoolBooksOutput(serializers.Serializer):
    """One pool's books of a period (``books_json`` writes the same)."""

    def to_representation(self, instance):
        return pool_books_json(instance)


class ShowbackLevelInput(InputSerializer):
    level = serializers.ChoiceField(
        choices=ShowbackSetting.Level.choices,
        help_text="off, hours (GPU-hours only) or cost (GPU-hours and their cost).",
    )


class ShowbackOfferOutput(serializers.Serializer):
    organization = serializers.CharField(source="organization.slug")
    level = serializers.ChoiceField(choices=ShowbackSetting.Level.choices)
    is_default = serializers.BooleanField(
        help_text="Nothing was set for the organization: the portal's default applies."
    )
