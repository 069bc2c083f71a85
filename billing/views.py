"""The web console's billing pages: the catalog with the prices that apply."""

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from scheduling import clock
from tenants import selectors as tenant_selectors
from tenants.permissions import caller_of

from . import selectors


@login_required
def catalog(request, org_slug: str):
    caller = caller_of(request)
    organization = tenant_selectors.organization_get(caller=caller, slug=org_slug)
    return render(
        request,
        "billing/catalog.html",
        {
            "organization": organization,
            "items": selectors.catalog_for(
                caller=caller, organization=organization, at=clock.now()
            ),
            "currency": settings.PORTAL_CURRENCY,
        },
    )
