"""Each token's rate is counted atomically in the shared cache (Redis in CI)."""

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.conf import settings
from django.test import override_settings
from rest_framework.request import ForcedAuthentication, Request
from rest_framework.test import APIRequestFactory

from tenants.api.throttling import TokenRateThrottle

pytestmark = pytest.mark.django_db

URL = "/api/v1/organizations/"


def request_with(token) -> Request:
    """A request of the API authenticated with `token`, as the views get it."""
    return Request(
        APIRequestFactory().get(URL),
        authenticators=[ForcedAuthentication(token.owner, token)],
    )


@override_settings(PORTAL_TOKEN_THROTTLE_RATE="100/hour")
def test_eight_clients_of_one_token_get_exactly_the_rate_through_the_shared_cache(
    mia, acme, token_for
):
    if "redis" not in settings.CACHES["default"]["BACKEND"]:
        pytest.skip("the shared counter is Redis's; set CACHE_URL=redis://… (see README)")
    token, _ = token_for(mia, acme, scope="read")

    def attempt(_) -> bool:
        return TokenRateThrottle().allow_request(request_with(token), view=None)

    with ThreadPoolExecutor(max_workers=8) as pool:
        allowed = list(pool.map(attempt, range(400)))
    assert sum(allowed) == 100
