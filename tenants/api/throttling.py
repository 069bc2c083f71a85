from django.conf import settings
from rest_framework.throttling import SimpleRateThrottle

from tenants.models import ApiToken


class TokenRateThrottle(SimpleRateThrottle):
    """Limits each API token to PORTAL_TOKEN_THROTTLE_RATE; console sessions are not limited."""

    scope = "token"

    def get_rate(self) -> str:
        return settings.PORTAL_TOKEN_THROTTLE_RATE

    def allow_request(self, request, view) -> bool:
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        return super().allow_request(request, view)

    def get_cache_key(self, request, view) -> str | None:
        if not isinstance(request.auth, ApiToken):
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.auth.pk}
