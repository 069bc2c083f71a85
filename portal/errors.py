"""The domain errors every app raises: one type per answer a user gets.

The API's error handler answers each with its `status` and `code`; the console shows its
message. `Forbidden` and `NotFound` are also Django's PermissionDenied and Http404, so any Django
view that lets one through still answers 403 or 404. Field-level refusals stay Django's
ValidationError with a dict of messages.
"""

from django.core.exceptions import PermissionDenied
from django.http import Http404


class DomainError(Exception):
    status = 400
    code = "invalid"

    def __init__(self, message: str, *, code: str | None = None, details: dict | None = None):
        super().__init__(message)
        self.message = message
        # What a client can act on, beyond the sentence (the API answers it as "details").
        self.details = details or {}
        if code is not None:
            self.code = code


class Conflict(DomainError):
    """The request is valid but the current state forbids it."""

    status = 409
    code = "conflict"


class Forbidden(DomainError, PermissionDenied):
    """The caller is known to the organization but its role or token does not allow this."""

    status = 403
    code = "permission_denied"


class NotFound(DomainError, Http404):
    """No such object, or one the caller may not know exists."""

    status = 404
    code = "not_found"


class Unavailable(DomainError):
    """Something the portal relies on (the cluster's API server) did not answer; a later try
    may succeed."""

    status = 503
    code = "unavailable"
