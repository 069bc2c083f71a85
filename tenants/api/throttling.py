from django.conf import settings
from django.core.cache import cache
from rest_framework.throttling import BaseThrottle

from portal import clock
from tenants.models import ApiToken

PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_rate(rate: str) -> tuple[int, int]:
    """ "1200/min" as (1200, 60): requests per window, and the window in seconds."""
    count, period = rate.split("/")
    return int(count), PERIODS[period[0]]


def _window_count(key: str, *, timeout: int) -> int:
    """This request's number within its window. `add` and `incr` are atomic in the shared
    cache (Redis; in-process memory holds a lock), so concurrent requests never share one."""
    if cache.add(key, 1, timeout=timeout):
        return 1
    try:
        return cache.incr(key)
    except ValueError:  # the key expired between the two calls: a new window began
        return 1 if cache.add(key, 1, timeout=timeout) else cache.incr(key)


class TokenRateThrottle(BaseThrottle):
    """Limits each API token to PORTAL_TOKEN_THROTTLE_RATE in fixed windows (a minute for
    "1200/min"), counted in the shared cache; console sessions are not limited."""

    def allow_request(self, request, view) -> bool:
        if not isinstance(request.auth, ApiToken):
            return True
        limit, seconds = parse_rate(settings.PORTAL_TOKEN_THROTTLE_RATE)
        now = clock.wall().timestamp()
        window = int(now // seconds)
        self.retry_after = (window + 1) * seconds - now
        key = f"throttle:token:{request.auth.pk}:{window}"
        return _window_count(key, timeout=seconds + 1) <= limit

    def wait(self) -> float:
        return self.retry_after
