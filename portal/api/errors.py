"""One error shape for every API failure: {"error": {"code", "message", "fields"}}."""

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler, set_rollback

from portal.errors import DomainError

NON_FIELD = api_settings.NON_FIELD_ERRORS_KEY


def error_body(
    *, code: str, message: str, fields: dict | None = None, details: dict | None = None
) -> dict:
    body = {"code": code, "message": message, "fields": fields or {}}
    if details:
        body["details"] = details
    return {"error": body}


def _as_field_messages(detail) -> dict:
    """DRF's nested error detail as {field: [messages]}, nested fields joined by dots."""
    if isinstance(detail, dict):
        fields = {}
        for name, value in detail.items():
            if isinstance(value, list) and any(isinstance(item, dict) for item in value):
                # A list of objects (a batch): each object's fields under its index.
                value = {str(index): item for index, item in enumerate(value) if item}
            nested = _as_field_messages(value)
            if isinstance(value, dict):
                fields.update(
                    {
                        name if key == NON_FIELD else f"{name}.{key}": messages
                        for key, messages in nested.items()
                    }
                )
            else:
                fields[str(name)] = nested[NON_FIELD]
        return fields
    if isinstance(detail, list):
        messages = []
        for item in detail:
            if isinstance(item, dict | list):
                messages.extend(m for ms in _as_field_messages(item).values() for m in ms)
            else:
                messages.append(str(item))
        return {NON_FIELD: messages}
    return {NON_FIELD: [str(detail)]}


def _validation_response(fields: dict) -> Response:
    first_field, messages = next(iter(fields.items()), (NON_FIELD, ["Invalid input."]))
    prefix = "" if first_field == NON_FIELD else f"{first_field}: "
    return Response(
        error_body(code="invalid", message=f"{prefix}{messages[0]}", fields=fields),
        status=status.HTTP_400_BAD_REQUEST,
    )


def _too_large() -> dict:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return error_body(code="request_too_large", message=f"The request body exceeds {limit} bytes.")


def error_response_handler(exc, context):
    if isinstance(exc, RequestDataTooBig):
        return Response(_too_large(), status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    if isinstance(exc, DjangoValidationError):
        if hasattr(exc, "error_dict"):
            fields = {name: list(messages) for name, messages in exc.message_dict.items()}
        else:
            fields = {NON_FIELD: list(exc.messages)}
        return _validation_response(fields)
    if isinstance(exc, DomainError):
        set_rollback()
        return Response(
            error_body(code=exc.code, message=exc.message, details=exc.details), status=exc.status
        )
    if isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or None)

    response = exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        return _validation_response(_as_field_messages(exc.detail))
    code = exc.get_codes() if isinstance(exc, exceptions.APIException) else "error"
    if isinstance(exc, exceptions.ParseError):
        code = "malformed_request"
    response.data = error_body(code=str(code), message=str(exc.detail))
    return response


@csrf_exempt  # any method: an unknown URL is a 404, never the CSRF page
def api_not_found(request, exception=None):
    return JsonResponse(
        error_body(code="not_found", message=f"No API endpoint at {request.path}."), status=404
    )


def api_bad_request(request, exception=None):
    """Django's own 400s under /api/ (a body over DATA_UPLOAD_MAX_MEMORY_SIZE read outside a
    view, a suspicious request): the error shape, never the HTML page."""
    if isinstance(exception, RequestDataTooBig):
        return JsonResponse(_too_large(), status=413)
    return JsonResponse(error_body(code="bad_request", message="Bad request."), status=400)


def api_server_error(request):
    return JsonResponse(
        error_body(code="server_error", message="An unexpected error happened; it was logged."),
        status=500,
    )
