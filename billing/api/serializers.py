from django.conf import settings
from rest_framework import serializers

from billing.models import CatalogItem


class CatalogItemOutput(serializers.ModelSerializer):
    gpu_class = serializers.CharField(source="gpu_class.name", read_only=True)
    tier = serializers.CharField(source="tier.name", default=None, read_only=True, allow_null=True)
    unit = serializers.CharField(read_only=True)
    currency = serializers.SerializerMethodField()
    unit_price = serializers.DecimalField(
        max_digits=14, decimal_places=4, read_only=True, allow_null=True
    )
    price_from = serializers.DateTimeField(read_only=True, allow_null=True)
    next_price = serializers.DecimalField(
        max_digits=14, decimal_places=4, read_only=True, allow_null=True
    )
    next_price_from = serializers.DateTimeField(read_only=True, allow_null=True)

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
            "currency",
            "unit_price",
            "price_from",
            "next_price",
            "next_price_from",
            "minimum_commitment_hours",
            "free_cancellation_hours",
            "cancellation_charge_percent",
            "auto_approve_up_to",
            "active_from",
            "active_until",
        ]

    def get_currency(self, item: CatalogItem) -> str:
        return settings.PORTAL_CURRENCY
