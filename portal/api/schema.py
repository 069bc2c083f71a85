"""What the OpenAPI schema says beyond the views' own annotations, for every operation at once:
the one error shape and the statuses it comes with, that request bodies take no field they do
not declare (portal.api.serializers.InputSerializer refuses them), and that no string of a
request may hold a NUL character."""

from rest_framework import status

ERROR = {
    "type": "object",
    "description": "Every failure of the API.",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "code": {
                    "type": "string",
                    "description": "Machine-readable, e.g. `invalid`, `not_found`, `last_owner`.",
                },
                "message": {"type": "string", "description": "For people; names the field."},
                "fields": {
                    "type": "object",
                    "description": "Messages per invalid field (nested ones joined by dots).",
                    "additionalProperties": {"type": "array", "items": {"type": "string"}},
                },
            },
            "required": ["code", "message", "fields"],
            "additionalProperties": False,
        }
    },
    "required": ["error"],
    "additionalProperties": False,
}

# Any operation may answer these.
ERRORS = {
    status.HTTP_400_BAD_REQUEST: "Invalid input: malformed JSON, a wrong type, an unknown field"
    " or value, a string too long, a bad query parameter; each is named in `fields`.",
    status.HTTP_401_UNAUTHORIZED: "No valid credentials.",
    status.HTTP_403_FORBIDDEN: "The caller's role, or a read-only token, does not allow it.",
    status.HTTP_404_NOT_FOUND: "Nothing the caller may see is at this address.",
    status.HTTP_406_NOT_ACCEPTABLE: "The API answers `application/json` only.",
    status.HTTP_409_CONFLICT: "The current state forbids it; `code` says which.",
    status.HTTP_429_TOO_MANY_REQUESTS: "The token sent more than its rate allows.",
}
# And those that read a request body, these.
BODY_ERRORS = {
    status.HTTP_413_REQUEST_ENTITY_TOO_LARGE: "The body exceeds the upload limit.",
    status.HTTP_415_UNSUPPORTED_MEDIA_TYPE: "The body is not `application/json`.",
}
HEADERS = {
    status.HTTP_401_UNAUTHORIZED: {
        "WWW-Authenticate": {
            "description": "The scheme to authenticate with.",
            "required": True,
            "schema": {"type": "string"},
        }
    },
    status.HTTP_429_TOO_MANY_REQUESTS: {
        "Retry-After": {
            "description": "Seconds until the token may send again.",
            "required": True,
            "schema": {"type": "integer", "minimum": 0},
        }
    },
}
ERROR_REF = {"$ref": "#/components/schemas/Error"}


def _error_response(code: int, description: str) -> dict:
    response = {"description": description, "content": {"application/json": {"schema": ERROR_REF}}}
    if code in HEADERS:
        response["headers"] = HEADERS[code]
    return response


# DRF and Django's form fields refuse the NUL character in any string (PostgreSQL cannot
# store it); a string the schema leaves unconstrained says so with this pattern.
NO_NUL = "^[^\\u0000]*$"


def _component(result: dict, reference: str) -> dict:
    return result["components"]["schemas"][reference.rsplit("/", 1)[-1]]


def _forbid_nul(schema: dict) -> None:
    """Each free string in `schema` (an input's): no NUL character."""
    if schema.get("type") == "string" and not {"enum", "format", "pattern"} & set(schema):
        schema["pattern"] = NO_NUL
    for nested in (*schema.get("properties", {}).values(), schema.get("items")):
        if isinstance(nested, dict):
            _forbid_nul(nested)
    if isinstance(schema.get("additionalProperties"), dict):
        _forbid_nul(schema["additionalProperties"])


def error_responses(result, generator, request, public):
    """drf-spectacular postprocessing hook: the error shape on every operation;
    `additionalProperties: false` on every request body; no NUL in any string of a request."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                _forbid_nul(parameter["schema"])
            errors = dict(ERRORS)
            body = operation.get("requestBody")
            if body:
                errors.update(BODY_ERRORS)
                for media in body["content"].values():
                    reference = media["schema"].get("$ref")
                    if reference:
                        component = _component(result, reference)
                        component["additionalProperties"] = False
                        _forbid_nul(component)
            responses = operation.setdefault("responses", {})
            for code, description in sorted(errors.items()):
                responses.setdefault(str(code), _error_response(code, description))
    return result
