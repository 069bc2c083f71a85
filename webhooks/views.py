"""The console's webhook pages, under the organization's settings: its owners and admins
register endpoints, pause, resume and delete them, and read and redeliver their deliveries."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from portal.console import REFUSED, attempt
from tenants.lookups import organization_of
from tenants.permissions import caller_of

from . import selectors, services
from .forms import EndpointForm

CREATED_SECRET_KEY = "webhooks.created_secret"
DELIVERIES_SHOWN = 50


@login_required
def webhooks(request, org_slug: str):
    caller = caller_of(request)
    organization = organization_of(request, org_slug)
    endpoints = selectors.endpoint_list(caller=caller, organization=organization)
    form = EndpointForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        given = {**form.cleaned_data, "secret": form.cleaned_data["secret"] or None}
        created = attempt(
            request,
            form,
            lambda: services.endpoint_create(caller=caller, organization=organization, **given),
        )
        if created is not REFUSED:
            # Shown on the next page only (post, redirect, get), as a token's secret is.
            request.session[CREATED_SECRET_KEY] = created[1]
            return redirect("webhooks:webhook", org_slug=org_slug, webhook_id=created[0].pk)
    return render(
        request,
        "webhooks/webhooks.html",
        {"organization": organization, "endpoints": endpoints, "form": form},
    )


@login_required
def webhook(request, org_slug: str, webhook_id):
    caller = caller_of(request)
    organization = organization_of(request, org_slug)
    endpoint = selectors.endpoint_get(caller=caller, organization=organization, pk=webhook_id)
    deliveries = selectors.delivery_list(caller=caller, endpoint=endpoint)[:DELIVERIES_SHOWN]
    return render(
        request,
        "webhooks/webhook.html",
        {
            "organization": organization,
            "endpoint": endpoint,
            "deliveries": deliveries,
            "created_secret": request.session.pop(CREATED_SECRET_KEY, None),
        },
    )


@login_required
@require_POST
def webhook_pause(request, org_slug: str, webhook_id):
    caller = caller_of(request)
    organization = organization_of(request, org_slug)
    endpoint = selectors.endpoint_get(caller=caller, organization=organization, pk=webhook_id)
    active = not endpoint.is_active
    changed = attempt(
        request,
        None,
        lambda: services.endpoint_update(caller=caller, endpoint=endpoint, is_active=active),
    )
    if changed is not REFUSED:
        messages.success(request, "Endpoint resumed." if active else "Endpoint paused.")
    return redirect("webhooks:webhook", org_slug=org_slug, webhook_id=webhook_id)


@login_required
@require_POST
def webhook_delete(request, org_slug: str, webhook_id):
    caller = caller_of(request)
    organization = organization_of(request, org_slug)
    endpoint = selectors.endpoint_get(caller=caller, organization=organization, pk=webhook_id)
    deleted = attempt(
        request, None, lambda: services.endpoint_delete(caller=caller, endpoint=endpoint)
    )
    if deleted is not REFUSED:
        messages.success(request, f"Endpoint {endpoint.url} deleted.")
    return redirect("webhooks:webhooks", org_slug=org_slug)


@login_required
@require_POST
def delivery_redeliver(request, org_slug: str, webhook_id, delivery_id):
    caller = caller_of(request)
    organization = organization_of(request, org_slug)
    endpoint = selectors.endpoint_get(caller=caller, organization=organization, pk=webhook_id)
    delivery = selectors.delivery_get(caller=caller, endpoint=endpoint, pk=delivery_id)
    sent = attempt(
        request, None, lambda: services.delivery_redeliver(caller=caller, delivery=delivery)
    )
    if sent is not REFUSED:
        messages.success(request, f"Delivery {delivery.pk} will be sent again.")
    return redirect("webhooks:webhook", org_slug=org_slug, webhook_id=webhook_id)
