"""What the operator API of billing reads and takes: every organization's orders, invoices and
credit notes, and credit grants."""

from rest_framework import serializers

from portal.api.serializers import InputSerializer
from tenants.models import SLUG_PATTERN

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
