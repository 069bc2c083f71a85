"""What the API says of where a workload is placed (its cluster, region and nodes) and of why
it waits."""

from rest_framework import serializers


class PlacementOutput(serializers.Serializer):
    replica = serializers.IntegerField()
    node = serializers.CharField(source="node.name")
    cluster = serializers.CharField(source="node.pool.cluster.name")
    region = serializers.CharField(source="node.pool.cluster.region")
    gpu_indices = serializers.ListField(child=serializers.IntegerField())
    gpu_milli = serializers.IntegerField()
    mig_profile = serializers.CharField()
    mig_count = serializers.IntegerField()


class WhereOutput(serializers.Serializer):
    cluster = serializers.CharField(source="name")
    region = serializers.CharField()


class PendingOutput(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    queue_position = serializers.IntegerField(allow_null=True)
    estimated_start = serializers.DateTimeField(
        allow_null=True, help_text="The most likely start (null: no estimate)."
    )
    estimated_start_low = serializers.DateTimeField(
        allow_null=True, help_text="The 80% interval's start: it starts later 9 times in 10."
    )
    estimated_start_high = serializers.DateTimeField(
        allow_null=True,
        help_text="The 80% interval's end: it starts earlier 9 times in 10 (null: not known).",
    )
