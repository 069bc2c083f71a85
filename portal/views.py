from django.db import connection
from django.http import JsonResponse
from django.views.defaults import bad_request as html_bad_request
from django.views.defaults import page_not_found
from django.views.defaults import server_error as html_server_error

from portal.api.errors import api_bad_request, api_not_found, api_server_error


def health(request):
    """Liveness and database reachability, for load balancers and probes."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})


def bad_request(request, exception=None):
    if request.path.startswith("/api/"):
        return api_bad_request(request, exception)
    return html_bad_request(request, exception)


def not_found(request, exception=None):
    if request.path.startswith("/api/"):
        return api_not_found(request, exception)
    return page_not_found(request, exception)


def server_error(request):
    if request.path.startswith("/api/"):
        return api_server_error(request)
    return html_server_error(request)
