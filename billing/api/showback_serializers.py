"""What the tenants' showback endpoint gives: an organization's part of the operator's books,
pool by pool (``selectors.Showback``)."""

from rest_framework import serializers


class ShowbackOutput(serializers.Serializer):
    pool = serializers.CharField(source="pool.name")
    gpu_class = serializers.CharField(source="pool.gpu_class_name")
    used_hours = serializers.DecimalField(max_digits=24, decimal_places=12)
    idle_hours = serializers.DecimalField(
        max_digits=24, decimal_places=12, help_text="Its share of the idle GPU-hours."
    )
    usage_cost = serializers.DecimalField(
        max_digits=14,
        decimal_places=2,
        allow_null=True,
        help_text="Null where the operator shows GPU-hours only.",
    )
    idle_cost = serializers.DecimalField(
        max_digits=14,
        decimal_places=2,
        allow_null=True,
        help_text="Its share of the cost of idle GPUs; null where the operator shows GPU-hours"
        " only.",
    )
    total = serializers.DecimalField(max_digits=14, decimal_places=2, allow_null=True)
