from django.conf import settings
from django.http import (
    HttpResponse,
    HttpResponseNotFound,
    HttpResponsePermanentRedirect,
    JsonResponse,
)
from django.shortcuts import render
from django.template import loader
from django.templatetags.static import static

from portal.api.errors import api_bad_request, api_not_found, api_server_error
from portal.health import heartbeats, readiness
from portal.metrics import bearer_token_matches, metrics_exposition

# What a console page says when it cannot answer, by status: what happened, and what to do.
ERRORS = {
    400: ("Bad request", "The portal could not read that request. Go back and try again."),
    403: (
        "Not allowed",
        "Your role does not allow this here. An owner or admin of the organization can do it,"
        " or change your role.",
    ),
    404: (
        "Not found",
        "There is no such page, or it belongs to an organization you are not a member of.",
    ),
    405: ("Not here", "This page does not take that kind of request; use its forms and links."),
    500: (
        "Something went wrong",
        "The portal could not answer. The operators have the details; try again in a moment.",
    ),
}


def health(request):
    """Liveness: the process answers. It reads nothing, so a database outage does not get
    every web pod restarted; readiness (`ready`) says whether it can serve."""
    return JsonResponse({"status": "ok"})


def ready(request):
    """Readiness: the database and the broker answer and every migration is applied; 503
    with the failed checks otherwise."""
    checks = readiness()
    failed = {name: why for name, why in checks.items() if why}
    body = {
        "status": "unavailable" if failed else "ok",
        "checks": {name: why or "ok" for name, why in checks.items()},
    }
    return JsonResponse(body, status=503 if failed else 200)


def workers_health(request):
    """The task side: 200 while a worker takes tasks and scheduling cycles finish, each within
    a few of its periods; 503 naming what is stale otherwise (portal/health.py)."""
    standings = heartbeats()
    stale = any(standing.stale for standing in standings)
    body = {
        "status": "stale" if stale else "ok",
        "checks": {standing.name: standing.problem or "ok" for standing in standings},
        "age_seconds": {
            standing.name: None if standing.age_seconds is None else round(standing.age_seconds)
            for standing in standings
        },
    }
    return JsonResponse(body, status=503 if stale else 200)


def metrics(request):
    """Prometheus metrics behind a bearer token (PORTAL_METRICS_TOKEN); without a token
    configured the endpoint does not exist."""
    token = settings.PORTAL_METRICS_TOKEN
    if not token:
        return HttpResponseNotFound("Not found.\n", content_type="text/plain")
    if not bearer_token_matches(request.headers.get("Authorization", ""), token):
        response = HttpResponse(
            "A bearer token is required.\n", status=401, content_type="text/plain"
        )
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    body, content_type = metrics_exposition(accept=request.headers.get("Accept"))
    return HttpResponse(body, content_type=content_type)


# Served before host validation and the HTTPS redirect: probes and Prometheus call a pod by
# its IP, over plain HTTP inside the cluster.
PROBES = {
    "/healthz": health,
    "/healthz/workers": workers_health,
    "/readyz": ready,
    "/metrics": metrics,
}


class ProbeMiddleware:
    """Answers the probes and /metrics at once, whatever the Host header (these responses
    build no URL from it) and without a redirect to HTTPS."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        view = PROBES.get(request.path_info)
        if view is None or request.method not in {"GET", "HEAD"}:
            return self.get_response(request)
        return view(request)


def favicon(request):
    """Browsers ask for /favicon.ico whatever the page says."""
    return HttpResponsePermanentRedirect(static("portal/favicon.svg"))


def error_page(request, status: int, message: str | None = None) -> HttpResponse:
    """The console's page for ``status``, inside its frame; ``message`` says why, when the
    refusal said."""
    title, default = ERRORS[status]
    message = message or default
    context = {"status": status, "title": title, "message": message}
    if status == 500:  # without the request's context: what failed may be behind it
        return HttpResponse(loader.render_to_string("error.html", context), status=500)
    return render(request, "error.html", context, status=status)


def bad_request(request, exception=None):
    if request.path.startswith("/api/"):
        return api_bad_request(request, exception)
    return error_page(request, 400)


def permission_denied(request, exception=None):
    # A domain refusal (portal.errors.Forbidden) says why: the role, a read-only token, the
    # single sign-on an organization requires.
    return error_page(request, 403, getattr(exception, "message", None))


def not_found(request, exception=None):
    if request.path.startswith("/api/"):
        return api_not_found(request, exception)
    return error_page(request, 404)


def server_error(request):
    if request.path.startswith("/api/"):
        return api_server_error(request)
    return error_page(request, 500)


class StyledMethodNotAllowed:
    """A console page asked with a method it does not take answers the styled 405 (Django's
    own is empty); the API answers its own."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if response.status_code != 405 or response.content or request.path.startswith("/api/"):
            return response
        styled = error_page(request, 405)
        styled["Allow"] = response.get("Allow", "")
        return styled
