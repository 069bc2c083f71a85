"""Reads of an organization's webhooks, for its owners and admins; and whether any exist."""

from django.db.models import QuerySet

from portal.db import one_or_not_found
from tenants.models import Organization
from tenants.permissions import Action, Caller, authorize

from .models import Delivery, Endpoint


def endpoint_list(*, caller: Caller, organization: Organization) -> QuerySet[Endpoint]:
    authorize(caller=caller, organization=organization, action=Action.WEBHOOK_VIEW)
    return Endpoint.objects.filter(organization=organization).select_related("organization")


def endpoint_get(*, caller: Caller, organization: Organization, pk) -> Endpoint:
    return one_or_not_found(endpoint_list(caller=caller, organization=organization), pk, "webhook")


def delivery_list(*, caller: Caller, endpoint: Endpoint) -> QuerySet[Delivery]:
    """The endpoint's deliveries, newest first (the body left out: the list shows the state
    and the last answer)."""
    authorize(caller=caller, organization=endpoint.organization, action=Action.WEBHOOK_VIEW)
    return endpoint.deliveries.defer("body").order_by("-created_at", "id")


def delivery_get(*, caller: Caller, endpoint: Endpoint, pk) -> Delivery:
    authorize(caller=caller, organization=endpoint.organization, action=Action.WEBHOOK_VIEW)
    deliveries = endpoint.deliveries.select_related("endpoint__organization")
    return one_or_not_found(deliveries, pk, "delivery")


def endpoints_active() -> bool:
    """Whether any organization has an active endpoint: with none, no event has deliveries
    to make (a burst of submissions then queues no task for them)."""
    return Endpoint.objects.filter(is_active=True).exists()
