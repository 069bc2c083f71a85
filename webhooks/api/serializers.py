from rest_framework import serializers

from portal.api.serializers import InputSerializer

from ..models import Delivery, Endpoint, EventType
from ..targets import RESPONSE_KEPT

URL_MAX = 2000


class EndpointOutput(serializers.ModelSerializer):
    organization = serializers.CharField(source="organization.slug", read_only=True)
    event_types = serializers.ListField(
        child=serializers.ChoiceField(choices=EventType.choices), read_only=True
    )
    secret_hint = serializers.CharField(
        read_only=True, help_text="The secret's first characters; the whole is shown once."
    )

    class Meta:
        model = Endpoint
        fields = [
            "id",
            "organization",
            "url",
            "description",
            "event_types",
            "is_active",
            "secret_hint",
            "created_at",
            "updated_at",
        ]


class EndpointCreatedOutput(EndpointOutput):
    secret = serializers.CharField(
        read_only=True,
        help_text="Signs every delivery (HMAC-SHA256); shown now and never again: store it.",
    )

    class Meta(EndpointOutput.Meta):
        fields = [*EndpointOutput.Meta.fields, "secret"]


class EndpointInput(InputSerializer):
    url = serializers.URLField(
        max_length=URL_MAX,
        help_text="http or https; refused if its host resolves to a private, loopback,"
        " link-local, multicast or reserved address.",
    )
    event_types = serializers.ListField(
        child=serializers.ChoiceField(choices=EventType.choices),
        min_length=1,
        max_length=len(EventType.values),
    )
    description = serializers.CharField(max_length=200, required=False, allow_blank=True)
    secret = serializers.CharField(
        min_length=16,
        max_length=200,
        required=False,
        help_text="Your own signing secret; left out, the portal generates one.",
    )
    is_active = serializers.BooleanField(required=False, help_text="False: paused.")


class EndpointUpdateInput(EndpointInput):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            field.required = False


class DeliveryOutput(serializers.ModelSerializer):
    last_response_body = serializers.CharField(
        read_only=True,
        help_text=f"The first {RESPONSE_KEPT} characters of the last answer's body.",
    )

    class Meta:
        model = Delivery
        fields = [
            "id",
            "event_type",
            "state",
            "attempts",
            "created_at",
            "last_attempt_at",
            "last_status_code",
            "last_response_body",
            "last_error",
            "next_attempt_at",
            "delivered_at",
        ]


class DeliveryDetailOutput(DeliveryOutput):
    body = serializers.CharField(read_only=True, help_text="The JSON body every attempt sends.")

    class Meta(DeliveryOutput.Meta):
        fields = [*DeliveryOutput.Meta.fields, "body"]
