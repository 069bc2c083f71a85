"""The capacity calendar endpoint: free, reserved and expected-busy GPUs per pool and hour for
the next days, and the earliest windows where a block of GPUs fits."""

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response

from portal import clock
from portal.api.serializers import AwareDateTimeField
from portal.api.views import ApiView
from scheduling import selectors
from scheduling.models import gpu_class_name_validator
from tenants.lookups import organization_of
from tenants.models import SLUG_PATTERN
from tenants.permissions import caller_of

HOURLY = serializers.ListField(child=serializers.IntegerField())


class CapacityQuery(serializers.Serializer):
    pool = serializers.RegexField(
        SLUG_PATTERN, max_length=40, required=False, help_text="Only this pool."
    )
    gpu_class = serializers.CharField(
        max_length=40,
        required=False,
        validators=[gpu_class_name_validator],
        help_text="Only the pools of this GPU class.",
    )
    hours = serializers.IntegerField(
        min_value=1,
        max_value=selectors.CALENDAR_HOURS,
        default=selectors.CALENDAR_HOURS,
        help_text="How many hours the calendar covers (14 days by default).",
    )
    gpus = serializers.IntegerField(
        min_value=1,
        max_value=100_000,
        required=False,
        help_text="Find the earliest windows where this many GPUs are free on one node (or"
        " rack, see `level`) for `length` hours.",
    )
    level = serializers.ChoiceField(
        choices=selectors.LEVELS,
        default=selectors.LEVELS[0],
        help_text="Where the block of `gpus` GPUs must be: on one node or one rack.",
    )
    length = serializers.IntegerField(
        min_value=1,
        max_value=selectors.CALENDAR_HOURS,
        default=1,
        help_text="How many hours the block must stay free.",
    )

    def get_fields(self):
        # `from` is a Python keyword: it cannot be declared as an attribute.
        fields = super().get_fields()
        fields["from"] = AwareDateTimeField(
            required=False,
            help_text="The calendar starts at the first full hour from then (default: now).",
        )
        return fields

    def as_block(self) -> selectors.BlockAsk | None:
        data = self.validated_data
        if "gpus" not in data:
            return None
        return selectors.BlockAsk(gpus=data["gpus"], level=data["level"], hours=data["length"])


class PoolCalendarOutput(serializers.Serializer):
    pool = serializers.CharField()
    gpu_class = serializers.CharField()
    schedulable = serializers.IntegerField(help_text="Whole GPUs of its uncordoned nodes.")
    free = serializers.ListField(
        child=serializers.IntegerField(), help_text="Per hour: neither reserved nor busy."
    )
    reserved = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="Per hour: held by reservations (any organization's) and not busy.",
    )
    busy = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="Per hour: held by running work expected to run then (to its max runtime;"
        " to the end of the calendar without one).",
    )
    largest_on_node = serializers.SerializerMethodField(
        help_text="Per hour: the most free GPUs on one node."
    )
    largest_on_rack = serializers.SerializerMethodField(
        help_text="Per hour: the most free GPUs on one rack."
    )

    @extend_schema_field(HOURLY)
    def get_largest_on_node(self, calendar) -> list[int]:
        return calendar.largest_block(selectors.LEVELS[0]).tolist()

    @extend_schema_field(HOURLY)
    def get_largest_on_rack(self, calendar) -> list[int]:
        return calendar.largest_block(selectors.LEVELS[1]).tolist()


class WindowOutput(serializers.Serializer):
    pool = serializers.CharField(source="window.pool")
    gpu_class = serializers.CharField(source="window.gpu_class")
    starts_at = serializers.DateTimeField(source="window.starts_at")
    ends_at = serializers.DateTimeField(source="window.ends_at")
    sentence = serializers.CharField(
        help_text="In words, in the organization's time zone: \"8 H100-80GB on one node in"
        ' dgx-h100: from Thursday 10:00".'
    )


class CapacityCalendarOutput(serializers.Serializer):
    start = serializers.DateTimeField(help_text="The start of the first hour.")
    hours = serializers.IntegerField()
    pools = PoolCalendarOutput(many=True)
    windows = WindowOutput(
        many=True,
        help_text="With `gpus`: the earliest windows where the block fits, the soonest first.",
    )


class CapacityCalendarApi(ApiView):
    query_serializer = CapacityQuery

    @extend_schema(
        operation_id="capacity_calendar",
        parameters=[CapacityQuery],
        responses=CapacityCalendarOutput,
        description="Per GPU pool, for each hour from the next full hour: whole GPUs free,"
        " reserved and expected busy (free + reserved + busy = schedulable every hour), and"
        " with `gpus` the earliest windows where that many GPUs on one node or rack are free"
        " for `length` hours: a reservation of them there would be accepted.",
    )
    def get(self, request, org_slug: str):
        organization = organization_of(request, org_slug)
        # A plain dict: from a QueryDict DRF takes `pool=` for no pool, not for a blank one.
        query = CapacityQuery(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        data = query.validated_data
        calendar = selectors.capacity_ahead(
            caller=caller_of(request),
            organization=organization,
            now=clock.now(),
            start=data.get("from"),
            hours=data["hours"],
            pool=data.get("pool"),
            gpu_class=data.get("gpu_class"),
            block=query.as_block(),
        )
        return Response(CapacityCalendarOutput(calendar).data)
