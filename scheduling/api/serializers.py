from datetime import timedelta

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from portal.api.serializers import AlikeItemsListSerializer, AwareDateTimeField, InputSerializer
from scheduling.models import (
    ENV_MAX_BYTES,
    ENV_MAX_VARIABLES,
    ENV_VALUE_MAX,
    IMAGE_MAX,
    GpuClass,
    PriorityTier,
    QuotaGrant,
    QuotaRequest,
    Reservation,
    Workload,
    WorkloadEvent,
    gpu_class_name_validator,
    image_reference_validator,
    mig_profile_validator,
)
from scheduling.services import (
    QuotaAsk,
    ReservationRequest,
    WorkloadRequest,
    request_bounds,
    request_default,
)
from tenants.models import SLUG_PATTERN

from .placement_serializers import PendingOutput, PlacementOutput, WhereOutput


def seconds_or_none(duration: timedelta | None) -> int | None:
    return int(duration.total_seconds()) if duration else None


class GpuClassOutput(serializers.ModelSerializer):
    mig_profiles = serializers.ListField(
        child=serializers.CharField(),
        read_only=True,
        help_text="The MIG profiles its GPUs may be split into (empty: none).",
    )

    class Meta:
        model = GpuClass
        fields = ["name", "memory_gib", "mig_profiles"]


class PriorityTierOutput(serializers.ModelSerializer):
    min_run_time_seconds = serializers.SerializerMethodField(
        help_text="Its work runs at least this long before it may be preempted (null: no minimum)."
    )
    notice_seconds = serializers.IntegerField(
        source="notice", read_only=True, help_text="Seconds between SIGTERM and SIGKILL."
    )

    class Meta:
        model = PriorityTier
        fields = [
            "name",
            "value",
            "preemptible",
            "description",
            "min_run_time_seconds",
            "notice_seconds",
            "max_evictions",
            "lost_work_credited",
        ]
        extra_kwargs = {
            "max_evictions": {"help_text": "Evictions before it is no longer a candidate."},
            "lost_work_credited": {
                "help_text": "Whether its evicted work is credited the GPU-seconds it lost."
            },
        }

    def get_min_run_time_seconds(self, tier) -> int | None:
        return seconds_or_none(tier.min_run_time)


def region_limits_output() -> serializers.DictField:
    return serializers.DictField(
        child=serializers.IntegerField(),
        read_only=True,
        help_text="The most that may be in use in a region, by region (in `unit`); a region not"
        " named is held to `limit` alone.",
    )


class QuotaOutput(serializers.ModelSerializer):
    project = serializers.CharField(
        source="project.slug", default=None, read_only=True, allow_null=True
    )
    gpu_class = serializers.CharField(source="gpu_class.name", read_only=True)
    unit = serializers.CharField(read_only=True)
    in_use = serializers.SerializerMethodField(help_text="Held by running work, in `unit`.")
    region_limits = region_limits_output()

    class Meta:
        model = QuotaGrant
        fields = [
            "project",
            "gpu_class",
            "resource",
            "mig_profile",
            "unit",
            "guarantee",
            "limit",
            "region_limits",
            "in_use",
            "cohort",
        ]

    def get_in_use(self, grant: QuotaGrant) -> int:
        return self.context["usage"][(grant.usage_scope, grant.engine_resource)]


class WorkloadOutput(serializers.ModelSerializer):
    project = serializers.CharField(source="project.slug", read_only=True)
    tier = serializers.CharField(source="tier.name", read_only=True)
    gpu_class = serializers.CharField(
        source="gpu_class.name", default=None, read_only=True, allow_null=True
    )
    submitted_by = serializers.EmailField(
        source="submitted_by.email", default=None, read_only=True, allow_null=True
    )
    max_runtime_seconds = serializers.SerializerMethodField()
    checkpoint_interval_seconds = serializers.SerializerMethodField()
    pending = serializers.SerializerMethodField()
    runs_in = serializers.SerializerMethodField(
        help_text="The cluster (and its region) its replicas are placed in; null: placed"
        " nowhere now (in a cluster that became unreachable, status_reason says so)."
        " A gang never spans clusters."
    )
    placements = PlacementOutput(source="active_placements", many=True, read_only=True)

    class Meta:
        model = Workload
        fields = [
            "id",
            "name",
            "project",
            "kind",
            "tier",
            "state",
            "status_reason",
            "gpu_classes",
            "gpu_class",
            "gpus",
            "gpu_milli",
            "mig_profile",
            "mig_count",
            "replicas",
            "min_replicas",
            "cpu_milli",
            "memory_mib",
            "image",
            "command",
            "env",
            "max_runtime_seconds",
            "required_topology",
            "region",
            "preemptible",
            "borrowed",
            "requeue_on_eviction",
            "evictions",
            "requeue_not_before",
            "checkpoint_interval_seconds",
            "last_checkpoint_at",
            "pending",
            "runs_in",
            "placements",
            "submitted_by",
            "submitted_at",
            "admitted_at",
            "started_at",
            "finished_at",
        ]

    def get_max_runtime_seconds(self, workload) -> int | None:
        return seconds_or_none(workload.max_runtime)

    def get_checkpoint_interval_seconds(self, workload) -> int | None:
        return seconds_or_none(workload.checkpoint_interval)

    @extend_schema_field(WhereOutput(allow_null=True))
    def get_runs_in(self, workload) -> dict | None:
        if not workload.active_placements:
            return None
        return WhereOutput(workload.active_placements[0].node.pool.cluster).data

    @extend_schema_field(PendingOutput(allow_null=True))
    def get_pending(self, workload) -> dict | None:
        if workload.state != Workload.State.PENDING or not workload.pending_code:
            return None
        return {
            "code": workload.pending_code,
            "message": workload.pending_message,
            "queue_position": workload.queue_position,
            "estimated_start": workload.estimated_start,
            "estimated_start_low": workload.estimated_start_low,
            "estimated_start_high": workload.estimated_start_high,
        }


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": {"type": "string", "maxLength": ENV_VALUE_MAX},
        "maxProperties": ENV_MAX_VARIABLES,
        "description": "Environment variables: names are C identifiers (letters, digits and _,"
        f" not a digit first); at most {ENV_MAX_VARIABLES} variables and {ENV_MAX_BYTES} bytes"
        " of names and values.",
    }
)
class EnvField(serializers.DictField):
    pass


def workload_request(validated: dict) -> WorkloadRequest:
    data = dict(validated)
    for field in ("max_runtime", "checkpoint_interval"):
        seconds = data.pop(f"{field}_seconds", None)
        data[field] = timedelta(seconds=seconds) if seconds else None
    data["gpu_classes"] = tuple(data["gpu_classes"])
    data["command"] = tuple(data["command"])
    return WorkloadRequest(**data)


class WorkloadSubmitInput(InputSerializer):
    # A batch's members alike but for their names (a job array) are validated once.
    alike_but_for = ("name",)

    class Meta:
        list_serializer_class = AlikeItemsListSerializer

    name = serializers.RegexField(SLUG_PATTERN, min_length=2, max_length=40)
    kind = serializers.ChoiceField(choices=Workload.Kind.choices)
    tier = serializers.RegexField(SLUG_PATTERN, max_length=40)
    image = serializers.CharField(max_length=IMAGE_MAX, validators=[image_reference_validator])
    gpu_classes = serializers.ListField(
        child=serializers.CharField(max_length=40, validators=[gpu_class_name_validator]),
        max_length=8,
        required=False,
        default=list,
    )
    gpus = serializers.IntegerField(**request_bounds("gpus"), default=0)
    gpu_milli = serializers.IntegerField(**request_bounds("gpu_milli"), default=0)
    # Omitted or empty: no MIG instances (the service's default; no schema default here, which
    # would sit in the alternative whose pattern refuses it).
    mig_profile = serializers.CharField(
        max_length=20,
        required=False,
        allow_blank=True,
        validators=[mig_profile_validator],
        help_text="A MIG profile of the class; omitted or empty for none.",
    )
    mig_count = serializers.IntegerField(**request_bounds("mig_count"), default=0)
    replicas = serializers.IntegerField(
        **request_bounds("replicas"), default=request_default("replicas")
    )
    min_replicas = serializers.IntegerField(**request_bounds("min_replicas"), required=False)
    cpu_milli = serializers.IntegerField(
        **request_bounds("cpu_milli"), default=request_default("cpu_milli")
    )
    memory_mib = serializers.IntegerField(
        **request_bounds("memory_mib"), default=request_default("memory_mib")
    )
    command = serializers.ListField(
        child=serializers.CharField(max_length=4096), max_length=64, required=False, default=list
    )
    env = EnvField(
        child=serializers.CharField(max_length=ENV_VALUE_MAX, allow_blank=True),
        required=False,
        default=dict,
    )
    max_runtime_seconds = serializers.IntegerField(
        **request_bounds("max_runtime_seconds"), required=False
    )
    required_topology = serializers.CharField(
        max_length=63, required=False, default="", allow_blank=True
    )
    region = serializers.CharField(
        max_length=40,
        required=False,
        default="",
        allow_blank=True,
        help_text="Run only in this region (a cluster's); empty: wherever the scheduler chooses.",
    )
    requeue_on_eviction = serializers.BooleanField(
        default=True,
        help_text="Back to the queue when preempted (at most PORTAL_EVICTIONS_MAX times).",
    )
    checkpoint_interval_seconds = serializers.IntegerField(
        **request_bounds("checkpoint_interval_seconds"),
        required=False,
        help_text="It saves a checkpoint this often from its start: evicted, it loses only the"
        " work since the last one, so it is a cheaper victim.",
    )

    def to_request(self) -> WorkloadRequest:
        return workload_request(self.validated_data)


class WorkloadCheckpointInput(InputSerializer):
    at = AwareDateTimeField(
        required=False,
        help_text="When the checkpoint was saved (default: now); not in the future, not before"
        " the workload started.",
    )


class WorkloadEventOutput(serializers.ModelSerializer):
    class Meta:
        model = WorkloadEvent
        fields = ["at", "kind", "message", "data"]


class ReservationOutput(serializers.ModelSerializer):
    project = serializers.CharField(
        source="project.slug", default=None, read_only=True, allow_null=True
    )
    gpu_class = serializers.CharField(source="gpu_class.name", read_only=True)
    pool = serializers.CharField(source="pool.name", read_only=True)
    requested_by = serializers.EmailField(
        source="requested_by.email", default=None, read_only=True, allow_null=True
    )
    lead_time_minutes = serializers.SerializerMethodField()
    mig_profile = serializers.CharField(read_only=True, help_text="Empty for whole GPUs.")
    unit = serializers.CharField(read_only=True, help_text="What `gpus` counts.")

    class Meta:
        model = Reservation
        fields = [
            "id",
            "project",
            "gpu_class",
            "pool",
            "gpus",
            "mig_profile",
            "unit",
            "short_gpus",
            "starts_at",
            "ends_at",
            "series",
            "lead_time_minutes",
            "state",
            "requested_by",
            "requested_at",
            "decided_at",
            "decision_reason",
            "cancelled_at",
        ]

    def get_lead_time_minutes(self, reservation: Reservation) -> int | None:
        lead = reservation.lead_time
        return None if lead is None else int(lead.total_seconds() // 60)


class ReservationInput(InputSerializer):
    gpu_class = serializers.CharField(max_length=40, validators=[gpu_class_name_validator])
    gpus = serializers.IntegerField(
        min_value=1, max_value=100_000, help_text="Whole GPUs, or instances of `mig_profile`."
    )
    mig_profile = serializers.CharField(
        max_length=20,
        required=False,
        allow_null=True,
        validators=[mig_profile_validator],
        help_text="Reserve instances of this MIG profile of the class instead of whole GPUs.",
    )
    starts_at = AwareDateTimeField()
    ends_at = AwareDateTimeField()
    pool = serializers.RegexField(SLUG_PATTERN, max_length=40, required=False, allow_null=True)
    project = serializers.RegexField(SLUG_PATTERN, max_length=40, required=False, allow_null=True)
    weeks = serializers.IntegerField(min_value=1, max_value=52, default=1)
    lead_time_minutes = serializers.IntegerField(
        min_value=0, max_value=7 * 24 * 60, required=False, allow_null=True
    )

    def as_request(self) -> ReservationRequest:
        data = self.validated_data
        lead = data.get("lead_time_minutes")
        return ReservationRequest(
            gpu_class=data["gpu_class"],
            gpus=data["gpus"],
            starts_at=data["starts_at"],
            ends_at=data["ends_at"],
            pool=data.get("pool"),
            project=data.get("project"),
            weeks=data["weeks"],
            lead_time=None if lead is None else timedelta(minutes=lead),
            mig_profile=data.get("mig_profile"),
        )


class ReservedBlockOutput(serializers.Serializer):
    starts_at = serializers.DateTimeField()
    ends_at = serializers.DateTimeField()
    gpus = serializers.IntegerField()
    own = serializers.BooleanField()
    id = serializers.UUIDField(source="reservation.pk", default=None, allow_null=True)
    project = serializers.CharField(
        source="reservation.project.slug", default=None, allow_null=True
    )


class FreeDayOutput(serializers.Serializer):
    day = serializers.DateField(
        help_text="A calendar day in the organization's time zone (midnight to midnight)."
    )
    free_gpus = serializers.IntegerField(
        help_text="The fewest free at any moment of that day (today: from now on)."
    )


class PoolTimelineOutput(serializers.Serializer):
    pool = serializers.CharField(source="pool.name")
    gpu_class = serializers.CharField(source="pool.gpu_class.name")
    mig_profile = serializers.CharField(
        help_text="The MIG profile whose instances the row counts (empty: whole GPUs)."
    )
    capacity = serializers.IntegerField()
    blocks = ReservedBlockOutput(many=True)
    free_by_day = FreeDayOutput(many=True)


class TimelineQuery(serializers.Serializer):
    days = serializers.IntegerField(min_value=1, max_value=90, default=14)


class QuotaRequestOutput(serializers.ModelSerializer):
    project = serializers.CharField(
        source="project.slug", default=None, read_only=True, allow_null=True
    )
    gpu_class = serializers.CharField(source="gpu_class.name", read_only=True)
    unit = serializers.CharField(read_only=True)
    requested_by = serializers.EmailField(
        source="requested_by.email", default=None, read_only=True, allow_null=True
    )

    class Meta:
        model = QuotaRequest
        fields = [
            "id",
            "project",
            "gpu_class",
            "resource",
            "mig_profile",
            "unit",
            "amount",
            "reason",
            "until",
            "state",
            "requested_by",
            "requested_at",
            "granted_amount",
            "granted_from",
            "granted_until",
            "decided_at",
            "decision_reason",
        ]


class QuotaResourceInput(InputSerializer):
    """Which quota: of a GPU class and resource, for the organization or one of its projects."""

    gpu_class = serializers.CharField(max_length=40, validators=[gpu_class_name_validator])
    resource = serializers.ChoiceField(
        choices=QuotaGrant.Resource.choices, default=QuotaGrant.Resource.GPUS
    )
    # Omitted or empty: no MIG instances (the service's default; no schema default here, which
    # would sit in the alternative whose pattern refuses it).
    mig_profile = serializers.CharField(
        max_length=20,
        required=False,
        allow_blank=True,
        validators=[mig_profile_validator],
        help_text="A MIG profile of the class; omitted or empty for none.",
    )
    project = serializers.RegexField(SLUG_PATTERN, max_length=40, required=False, allow_null=True)


class QuotaRequestInput(QuotaResourceInput):
    amount = serializers.IntegerField(min_value=1, max_value=1_000_000)
    reason = serializers.CharField(max_length=1000)
    until = AwareDateTimeField(required=False, allow_null=True)

    def as_ask(self) -> QuotaAsk:
        return QuotaAsk(**self.validated_data)
