"""The webhooks API: an organization's endpoints and their deliveries, for its owners and
admins (members and viewers get 403, another tenant 404)."""

import django_filters
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.response import Response

from portal.api.filters import EnumFilter
from portal.api.views import ApiView, CollectionApiView, list_response, validated
from tenants.lookups import organization_of
from tenants.permissions import caller_of

from .. import selectors, services
from ..models import Delivery, Endpoint, EventType
from .serializers import (
    DeliveryDetailOutput,
    DeliveryOutput,
    EndpointCreatedOutput,
    EndpointInput,
    EndpointOutput,
    EndpointUpdateInput,
)

NO_CONTENT = {204: OpenApiResponse(description="Done.")}


def _endpoint(request, org_slug: str, webhook_id) -> Endpoint:
    return selectors.endpoint_get(
        caller=caller_of(request), organization=organization_of(request, org_slug), pk=webhook_id
    )


class EndpointCollectionApi(CollectionApiView):
    queryset = Endpoint.objects.none()
    ordering_fields = ["created_at", "url"]

    @extend_schema(operation_id="webhooks_list", responses=EndpointOutput(many=True))
    def get(self, request, org_slug: str):
        endpoints = selectors.endpoint_list(
            caller=caller_of(request), organization=organization_of(request, org_slug)
        )
        return list_response(view=self, queryset=endpoints, serializer_class=EndpointOutput)

    @extend_schema(
        operation_id="webhooks_create",
        request=EndpointInput,
        responses={201: EndpointCreatedOutput},
        description="Register an endpoint for the event types chosen. The answer carries the"
        " signing secret, shown this once.",
    )
    def post(self, request, org_slug: str):
        endpoint, secret = services.endpoint_create(
            caller=caller_of(request),
            organization=organization_of(request, org_slug),
            **validated(EndpointInput, request).validated_data,
        )
        endpoint.secret = secret
        return Response(EndpointCreatedOutput(endpoint).data, status=status.HTTP_201_CREATED)


class EndpointDetailApi(ApiView):
    @extend_schema(operation_id="webhooks_retrieve", responses=EndpointOutput)
    def get(self, request, org_slug: str, webhook_id):
        return Response(EndpointOutput(_endpoint(request, org_slug, webhook_id)).data)

    @extend_schema(
        operation_id="webhooks_update",
        request=EndpointUpdateInput,
        responses=EndpointOutput,
        description="Change what is given: the URL, event types, description, secret, or"
        " `is_active` (false pauses the endpoint).",
    )
    def patch(self, request, org_slug: str, webhook_id):
        endpoint = services.endpoint_update(
            caller=caller_of(request),
            endpoint=_endpoint(request, org_slug, webhook_id),
            **validated(EndpointUpdateInput, request).validated_data,
        )
        return Response(EndpointOutput(endpoint).data)

    @extend_schema(operation_id="webhooks_destroy", responses=NO_CONTENT)
    def delete(self, request, org_slug: str, webhook_id):
        services.endpoint_delete(
            caller=caller_of(request), endpoint=_endpoint(request, org_slug, webhook_id)
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class DeliveryFilter(django_filters.FilterSet):
    state = EnumFilter(choices=Delivery.State.choices)
    event_type = EnumFilter(choices=EventType.choices)

    class Meta:
        model = Delivery
        fields = ["state", "event_type"]


class DeliveryCollectionApi(CollectionApiView):
    queryset = Delivery.objects.none()
    filterset_class = DeliveryFilter
    ordering_fields = ["created_at", "last_attempt_at"]

    @extend_schema(
        operation_id="webhook_deliveries_list",
        responses=DeliveryOutput(many=True),
        description="The endpoint's deliveries, newest first, with their state, attempts and"
        " the last answer.",
    )
    def get(self, request, org_slug: str, webhook_id):
        endpoint = _endpoint(request, org_slug, webhook_id)
        deliveries = selectors.delivery_list(caller=caller_of(request), endpoint=endpoint)
        return list_response(view=self, queryset=deliveries, serializer_class=DeliveryOutput)


class DeliveryDetailApi(ApiView):
    @extend_schema(operation_id="webhook_deliveries_retrieve", responses=DeliveryDetailOutput)
    def get(self, request, org_slug: str, webhook_id, delivery_id):
        endpoint = _endpoint(request, org_slug, webhook_id)
        delivery = selectors.delivery_get(
            caller=caller_of(request), endpoint=endpoint, pk=delivery_id
        )
        return Response(DeliveryDetailOutput(delivery).data)


class DeliveryRedeliverApi(ApiView):
    @extend_schema(
        operation_id="webhook_deliveries_redeliver",
        request=None,
        responses={202: DeliveryOutput},
        description="Send a delivered or failed delivery again, under the same id, as one"
        " attempt more (soon after, by the worker). One still waiting for an attempt is a 409"
        " `delivery_waiting`; one of a paused endpoint a 409 `endpoint_paused`.",
    )
    def post(self, request, org_slug: str, webhook_id, delivery_id):
        caller = caller_of(request)
        endpoint = _endpoint(request, org_slug, webhook_id)
        delivery = selectors.delivery_get(caller=caller, endpoint=endpoint, pk=delivery_id)
        delivery = services.delivery_redeliver(caller=caller, delivery=delivery)
        return Response(DeliveryOutput(delivery).data, status=status.HTTP_202_ACCEPTED)
