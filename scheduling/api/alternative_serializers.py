"""The workload detail's pending reason with its alternatives: what would unblock it."""

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from scheduling.engine.alternatives import AlternativeKind

from .placement_serializers import PendingOutput
from .serializers import WorkloadOutput


class QuotaPrefillOutput(serializers.Serializer):
    gpu_class = serializers.CharField()
    resource = serializers.CharField()
    mig_profile = serializers.CharField()
    amount = serializers.IntegerField(help_text="The amount missing, in the resource's unit.")
    reason = serializers.CharField()
    form_url = serializers.SerializerMethodField(
        help_text="The console's quota request form with these fields filled in."
    )

    def get_form_url(self, prefill) -> str:
        organization = self.context["organization_slug"]
        return f"{reverse('workloads:quotas', args=[organization])}?{prefill.query}"


class AlternativeOutput(serializers.Serializer):
    kind = serializers.ChoiceField(choices=[k.value for k in AlternativeKind])
    change = serializers.CharField(help_text="What changes from the workload as submitted.")
    admitted = serializers.BooleanField(help_text="Admitted at once when submitted so.")
    gpu_class = serializers.CharField()
    pool = serializers.CharField(help_text="Where it would be admitted; empty if it waits.")
    start = serializers.DateTimeField(help_text="When it would start (estimated if it waits).")
    not_before = serializers.DateTimeField(
        allow_null=True, help_text="For a later start: submit it at this time."
    )
    gpu_classes = serializers.ListField(child=serializers.CharField())
    gpus = serializers.IntegerField()
    gpu_milli = serializers.IntegerField()
    mig_profile = serializers.CharField()
    mig_count = serializers.IntegerField()
    replicas = serializers.IntegerField()
    gpu_hours = serializers.FloatField(
        allow_null=True, help_text="GPU-hours over its max runtime; null without one."
    )
    cost = serializers.DecimalField(
        max_digits=14,
        decimal_places=2,
        allow_null=True,
        help_text="At the catalog's prices, over its max runtime; null without one or a price.",
    )
    cost_per_hour = serializers.DecimalField(
        max_digits=14,
        decimal_places=2,
        allow_null=True,
        help_text="At the catalog's prices, for an hour; null without a price.",
    )
    currency = serializers.CharField(help_text="The catalog's currency, of both costs.")
    quota_request = serializers.SerializerMethodField()

    @extend_schema_field(QuotaPrefillOutput(allow_null=True))
    def get_quota_request(self, alternative) -> dict | None:
        if alternative.quota_request is None:
            return None
        return QuotaPrefillOutput(alternative.quota_request, context=self.context).data


class PendingDetailOutput(PendingOutput):
    alternatives = AlternativeOutput(
        many=True,
        help_text="What would unblock it: variants the engine has tried that start it sooner.",
    )


class WorkloadDetailOutput(WorkloadOutput):
    """A workload as its own page shows it: its pending reason with the alternatives
    (`services.workload_alternatives`, given as the context's ``alternatives``)."""

    @extend_schema_field(PendingDetailOutput(allow_null=True))
    def get_pending(self, workload) -> dict | None:
        pending = super().get_pending(workload)
        if pending is None:
            return None
        context = {**self.context, "organization_slug": workload.project.organization.slug}
        shown = AlternativeOutput(self.context["alternatives"], many=True, context=context)
        return {**pending, "alternatives": shown.data}
