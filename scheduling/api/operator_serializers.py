"""What the operator API of scheduling reads and takes: pools, nodes, GPU classes, tiers,
quota grants, reservations and quota requests of every tenant, the queue, the insights and
the start estimates' calibration."""

from datetime import timedelta

from rest_framework import serializers

from portal.api.serializers import AwareDateTimeField, InputSerializer
from scheduling.models import (
    NOTICE_MAX_SECONDS,
    GpuClass,
    Node,
    NodePool,
    PriorityTier,
    QuotaGrant,
    Workload,
    mig_profile_validator,
)
from scheduling.services import GrantKey
from tenants.models import SLUG_PATTERN

from .serializers import (
    PriorityTierOutput,
    QuotaRequestOutput,
    QuotaResourceInput,
    ReservationOutput,
    region_limits_output,
    seconds_or_none,
)

REFERENCE_MAX = 100


class PoolOutput(serializers.ModelSerializer):
    gpu_class = serializers.CharField(
        source="gpu_class.name", default=None, read_only=True, allow_null=True
    )
    nodes = serializers.IntegerField(source="node_count", read_only=True)
    nodes_ready = serializers.IntegerField(read_only=True)
    nodes_cordoned = serializers.IntegerField(read_only=True)
    gpus = serializers.IntegerField(
        source="gpu_total", read_only=True, help_text="Whole GPUs of its nodes, cordoned too."
    )

    class Meta:
        model = NodePool
        fields = [
            "name",
            "gpu_class",
            "purpose",
            "nodes",
            "nodes_ready",
            "nodes_cordoned",
            "gpus",
            "labels",
            "taint_key",
            "taint_value",
            "taint_effect",
            "topology_keys",
        ]


class NodeOutput(serializers.ModelSerializer):
    pool = serializers.CharField(source="pool.name", read_only=True)
    gpu_class = serializers.CharField(
        source="pool.gpu_class.name", default=None, read_only=True, allow_null=True
    )

    class Meta:
        model = Node
        fields = [
            "name",
            "pool",
            "gpu_class",
            "gpu_count",
            "mig_layout",
            "cpu_milli",
            "memory_mib",
            "topology",
            "labels",
            "ready",
            "cordoned",
            "last_seen_at",
        ]


class WorkloadReferenceOutput(serializers.Serializer):
    id = serializers.UUIDField()
    organization = serializers.CharField(source="project.organization.slug")
    project = serializers.CharField(source="project.slug")
    name = serializers.CharField()
    state = serializers.CharField()


class NodeDrainOutput(serializers.Serializer):
    node = NodeOutput()
    requeued = WorkloadReferenceOutput(
        many=True, help_text="The workloads that had a replica on it, back in the queue."
    )


class OperatorGpuClassOutput(serializers.ModelSerializer):
    class Meta:
        model = GpuClass
        fields = [
            "name",
            "memory_gib",
            "products",
            "mig_profiles",
            "resource_name",
            "shared_resource_name",
        ]


class GpuClassUpdateInput(InputSerializer):
    memory_gib = serializers.IntegerField(min_value=1, max_value=100_000, required=False)
    products = serializers.ListField(
        child=serializers.CharField(max_length=REFERENCE_MAX),
        max_length=50,
        required=False,
        help_text="The `nvidia.com/gpu.product` values that are this class.",
    )
    mig_profiles = serializers.ListField(
        child=serializers.CharField(max_length=20, validators=[mig_profile_validator]),
        max_length=20,
        required=False,
    )
    resource_name = serializers.CharField(max_length=REFERENCE_MAX, required=False)
    shared_resource_name = serializers.CharField(max_length=REFERENCE_MAX, required=False)


class OperatorTierOutput(PriorityTierOutput):
    """A tier as operators see it: what tenants see, its idle rules, and its notice as set."""

    idle_warn_after_seconds = serializers.SerializerMethodField()
    idle_stop_after_seconds = serializers.SerializerMethodField()
    notice_seconds = serializers.IntegerField(
        read_only=True, allow_null=True, help_text="SIGTERM to SIGKILL on eviction (null: 30)."
    )

    class Meta(PriorityTierOutput.Meta):
        fields = [
            *PriorityTierOutput.Meta.fields,
            "idle_warn_after_seconds",
            "idle_stop_after_seconds",
        ]

    def get_idle_warn_after_seconds(self, tier: PriorityTier) -> int | None:
        return seconds_or_none(tier.idle_warn_after)

    def get_idle_stop_after_seconds(self, tier: PriorityTier) -> int | None:
        return seconds_or_none(tier.idle_stop_after)


IDLE_MAX_SECONDS = 366 * 24 * 3600


class TierUpdateInput(InputSerializer):
    value = serializers.IntegerField(min_value=-1_000_000, max_value=1_000_000, required=False)
    preemptible = serializers.BooleanField(required=False)
    description = serializers.CharField(max_length=200, allow_blank=True, required=False)
    idle_warn_after_seconds = serializers.IntegerField(
        min_value=60, max_value=IDLE_MAX_SECONDS, allow_null=True, required=False
    )
    idle_stop_after_seconds = serializers.IntegerField(
        min_value=60, max_value=IDLE_MAX_SECONDS, allow_null=True, required=False
    )
    min_run_time_seconds = serializers.IntegerField(
        min_value=1, max_value=IDLE_MAX_SECONDS, allow_null=True, required=False
    )
    notice_seconds = serializers.IntegerField(
        min_value=0, max_value=NOTICE_MAX_SECONDS, allow_null=True, required=False
    )
    max_evictions = serializers.IntegerField(
        min_value=1, max_value=1000, allow_null=True, required=False
    )
    lost_work_credited = serializers.BooleanField(required=False)

    def changes(self) -> dict:
        """The tier's fields as sent, durations as durations."""
        changes = dict(self.validated_data)
        for name in ("idle_warn_after", "idle_stop_after", "min_run_time"):
            if f"{name}_seconds" in changes:
                seconds = changes.pop(f"{name}_seconds")
                changes[name] = None if seconds is None else timedelta(seconds=seconds)
        return changes


class OperatorQuotaGrantOutput(serializers.ModelSerializer):
    organization = serializers.CharField(source="organization.slug", read_only=True)
    project = serializers.CharField(
        source="project.slug", default=None, read_only=True, allow_null=True
    )
    gpu_class = serializers.CharField(source="gpu_class.name", read_only=True)
    unit = serializers.CharField(read_only=True)
    region_limits = region_limits_output()

    class Meta:
        model = QuotaGrant
        fields = [
            "organization",
            "project",
            "gpu_class",
            "resource",
            "mig_profile",
            "unit",
            "guarantee",
            "limit",
            "region_limits",
            "cohort",
        ]


class QuotaGrantKeyInput(QuotaResourceInput):
    """Which grant: an organization's (or one of its projects') of a GPU class and resource;
    and why it changes."""

    organization = serializers.RegexField(SLUG_PATTERN, max_length=40)
    reason = serializers.CharField(max_length=500, help_text="Why: kept in the audit trail.")

    KEY = ("organization", "project", "gpu_class", "resource", "mig_profile")

    def key(self) -> GrantKey:
        data = self.validated_data
        return GrantKey(**{name: data[name] for name in self.KEY if name in data})


class QuotaGrantSetInput(QuotaGrantKeyInput):
    guarantee = serializers.IntegerField(min_value=0, max_value=1_000_000)
    limit = serializers.IntegerField(
        min_value=0, max_value=1_000_000, help_text="The guarantee plus what may be borrowed."
    )
    cohort = serializers.CharField(max_length=40, required=False, allow_blank=True, default="")
    region_limits = serializers.DictField(
        child=serializers.IntegerField(min_value=0, max_value=1_000_000),
        required=False,
        allow_empty=True,
        help_text='The most in use in a region, by region: {"us-east": 16}; {} lifts every'
        " region's cap; omitted: as they were.",
    )


class OperatorReservationOutput(ReservationOutput):
    organization = serializers.CharField(source="organization.slug", read_only=True)

    class Meta(ReservationOutput.Meta):
        fields = ["organization", *ReservationOutput.Meta.fields]


class OperatorQuotaRequestOutput(QuotaRequestOutput):
    organization = serializers.CharField(source="organization.slug", read_only=True)

    class Meta(QuotaRequestOutput.Meta):
        fields = ["organization", *QuotaRequestOutput.Meta.fields]


class QuotaApproveInput(InputSerializer):
    amount = serializers.IntegerField(
        min_value=1, max_value=1_000_000, required=False, help_text="Omitted: what was asked."
    )
    until = AwareDateTimeField(
        required=False, allow_null=True, help_text="Omitted or null: what was asked."
    )


class QueueEntryOutput(serializers.ModelSerializer):
    organization = serializers.CharField(source="project.organization.slug", read_only=True)
    project = serializers.CharField(source="project.slug", read_only=True)
    tier = serializers.CharField(source="tier.name", read_only=True)
    pending_code = serializers.CharField(read_only=True, help_text="Why it waits, for machines.")
    pending_message = serializers.CharField(read_only=True, help_text="Why it waits, in words.")

    class Meta:
        model = Workload
        fields = [
            "id",
            "organization",
            "project",
            "name",
            "kind",
            "tier",
            "gpu_classes",
            "gpus",
            "gpu_milli",
            "mig_profile",
            "mig_count",
            "replicas",
            "submitted_at",
            "queue_position",
            "estimated_start",
            "estimated_start_low",
            "estimated_start_high",
            "pending_code",
            "pending_message",
        ]


class InsightOutput(serializers.Serializer):
    rule = serializers.CharField(help_text="A slug, the same as the alert rule's.")
    title = serializers.CharField()
    finding = serializers.CharField(help_text="What is measured, in words.")
    advice = serializers.CharField(help_text="What it usually means and what to do.")
    subjects = serializers.ListField(child=serializers.CharField())
    cluster = serializers.CharField(help_text="The cluster it is about; empty: the whole portal.")


class CalibrationQuery(serializers.Serializer):
    days = serializers.IntegerField(
        required=False,
        default=30,
        min_value=1,
        max_value=365,
        help_text="The period: workloads that started in the last this many days (default 30).",
    )


class EstimateCalibrationOutput(serializers.Serializer):
    gpu_class = serializers.CharField(
        help_text="The GPU class the work started on; empty: all of it."
    )
    estimates = serializers.IntegerField(help_text="Workloads judged: estimated, then started.")
    within = serializers.FloatField(
        allow_null=True,
        help_text="Share (0-1) of actual starts inside the first estimate's 80% interval.",
    )
    median_error_seconds = serializers.FloatField(
        allow_null=True,
        help_text="Median absolute error of the first estimate's most likely start, seconds.",
    )
