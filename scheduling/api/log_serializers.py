"""The logs endpoint's query: which replica, how many lines, since when, whether to follow."""

import re
from datetime import timedelta

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from portal import clock
from portal.api.serializers import AwareDateTimeField
from portal.bounds import FIRST_YEAR, LAST_YEAR, year_in_range
from scheduling.selectors import TAIL_MAX

_AGO = re.compile(r"^(\d{1,6})([smhd])$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
SINCE_PATTERN = r"^(\d{1,6}[smhd]|\d{4}-\d{2}-\d{2}T.+)$"


@extend_schema_field({"type": "string", "pattern": SINCE_PATTERN})
class LogsSinceField(serializers.CharField):
    """A time with its UTC offset (ISO 8601), or how long ago: `30s`, `10m`, `2h`, `1d`."""

    default_error_messages = {
        "since": "A time with its UTC offset (2026-06-01T09:00:00Z) or how long ago (30s, "
        "10m, 2h, 1d).",
        "range": f"A time in the years {FIRST_YEAR} to {LAST_YEAR}.",
    }

    def to_internal_value(self, data):
        text = super().to_internal_value(data)
        ago = _AGO.match(text)
        if ago is None:
            try:
                return AwareDateTimeField().to_internal_value(text)
            except serializers.ValidationError:
                self.fail("since")
        try:
            instant = clock.now() - timedelta(seconds=int(ago[1]) * _SECONDS[ago[2]])
        except OverflowError:  # before the year 1
            self.fail("range")
        if not year_in_range(instant.year):
            self.fail("range")
        return instant


class WorkloadLogsQuery(serializers.Serializer):
    replica = serializers.IntegerField(
        min_value=0,
        max_value=32767,
        required=False,
        help_text="One replica's lines (0-based). Without it, every replica's, each line"
        " prefixed `[replica N] ` when the workload has more than one.",
    )
    tail = serializers.IntegerField(
        min_value=1, max_value=TAIL_MAX, required=False, help_text="The last N lines only."
    )
    since = LogsSinceField(
        required=False,
        help_text="Lines written at or after this time: ISO 8601 with its offset"
        " (`2026-06-01T09:00:00Z`) or how long ago (`30s`, `10m`, `2h`, `1d`).",
    )
    follow = serializers.BooleanField(
        default=False,
        help_text="Keep the answer open and stream new lines as they are written, until the"
        " workload's containers end or PORTAL_LOGS_FOLLOW_MAX_SECONDS (300 s by default) pass.",
    )
