"""The API explorers, served whole by the portal (drf-spectacular's sidecar): usable on a
cluster without internet."""

from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularRedocView

# Only the portal's own files: ReDoc would fetch its "powered by" logo from its CDN, which the
# browser then refuses before any request leaves (its inline start-up script, its styles and
# its search worker are the page's own).
SAME_ORIGIN_ONLY = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline';"
    " img-src 'self' data:; worker-src 'self' blob:; font-src 'self' data:"
)


class RedocView(SpectacularRedocView):
    template_name = "api/redoc.html"

    @extend_schema(exclude=True)
    def get(self, request, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        response["Content-Security-Policy"] = SAME_ORIGIN_ONLY
        return response
