from rest_framework import serializers


class InputSerializer(serializers.Serializer):
    """Request bodies: unknown fields are an error, so a misspelt field never passes silently."""

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError(
                    {name: ["Unknown field."] for name in unknown}, code="unknown_field"
                )
        return super().to_internal_value(data)
