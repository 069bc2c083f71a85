"""Who and what a log line is about: the request id (taken from X-Request-ID when well formed,
else made here, and echoed in the response), the user and organization of the request, and the
Celery task. A request's id travels with the tasks it queues in a message header, so a task's
lines carry the id of the request that caused it."""

import logging
import re
import uuid
from contextvars import ContextVar
from dataclasses import dataclass, field, replace

from django.utils.functional import empty

REQUEST_ID_HEADER = "X-Request-ID"
# The message header that carries the request id into a task.
TASK_HEADER = "portal_request_id"
# What an id from outside may be: letters, digits and . _ : - , at most 128 (a UUID, a trace id).
WELL_FORMED_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


@dataclass
class LogContext:
    request_id: str | None = None
    task_id: str | None = None
    organization: str | None = None
    # The HttpRequest, to read its user once authentication has run (never forcing it).
    request: object | None = field(default=None, repr=False)


_context: ContextVar[LogContext | None] = ContextVar("portal_log_context", default=None)


def current() -> LogContext:
    """The context of what runs now (an empty one outside any request or task)."""
    return _context.get() or LogContext()


def request_id_from(header: str | None) -> str:
    """The id a request is logged under: the caller's when well formed, else a new one."""
    if header and WELL_FORMED_ID.fullmatch(header):
        return header
    return uuid.uuid4().hex


def _user_of(request) -> str | None:
    """The id of the request's user if something already authenticated it (a session read, or
    DRF's token authentication, which sets it on the request); never a query of its own."""
    user = vars(request).get("user") if request is not None else None
    if user is None or vars(user).get("_wrapped", None) is empty:
        return None
    if not getattr(user, "is_authenticated", False):
        return None
    return str(user.pk)


class RequestIdMiddleware:
    """Outermost: every line logged while the request is served carries its id, and the
    response tells the caller which id to quote."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.request_id = request_id_from(request.headers.get(REQUEST_ID_HEADER))
        request.log_context = LogContext(request_id=request.request_id, request=request)
        token = _context.set(request.log_context)
        try:
            response = self.get_response(request)
        finally:
            _context.reset(token)
        response[REQUEST_ID_HEADER] = request.request_id
        return response

    def process_view(self, request, view_func, view_args, view_kwargs):
        context = _context.get()
        if context is not None and view_kwargs.get("org_slug"):
            context.organization = view_kwargs["org_slug"]


class ContextFilter(logging.Filter):
    """Adds request_id, task_id, user and organization to every record (None outside)."""

    def filter(self, record: logging.LogRecord) -> bool:
        context = current()
        # Django logs a 4xx or 5xx with the request after the middleware returned.
        request = getattr(record, "request", None)
        if context.request is None and hasattr(request, "log_context"):
            context = request.log_context
        record.request_id = context.request_id
        record.task_id = context.task_id
        record.organization = context.organization
        record.user = _user_of(context.request)
        return True


# Celery signal receivers (connected in portal/celery.py).


def task_publish_tag(headers=None, **_signal) -> None:
    """before_task_publish: the current request's (or task's) id goes with the message."""
    request_id = current().request_id
    if headers is not None and request_id and TASK_HEADER not in headers:
        headers[TASK_HEADER] = request_id


_task_tokens: dict[str, object] = {}


def task_context_enter(task_id=None, task=None, **_signal) -> None:
    """task_prerun: the task's lines carry its id and the id of the request that queued it (an
    eager task, run inside the request, keeps the request's context)."""
    outer = current()
    headers = getattr(task.request, "headers", None) or {}
    request_id = (
        getattr(task.request, TASK_HEADER, None) or headers.get(TASK_HEADER) or outer.request_id
    )
    _task_tokens[task_id] = _context.set(replace(outer, request_id=request_id, task_id=task_id))


def task_context_exit(task_id=None, **_signal) -> None:
    """task_postrun: back to what was there before the task."""
    token = _task_tokens.pop(task_id, None)
    if token is not None:
        _context.reset(token)


def logging_config(*, log_format: str, level: str) -> dict:
    """Django's LOGGING: one stream handler, as text (development) or JSON lines
    (production), every record with its context."""
    fields = "%(asctime)s %(levelname)s %(name)s %(message)s"
    context = "%(request_id)s %(task_id)s %(user)s %(organization)s"
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"context": {"()": "portal.logs.ContextFilter"}},
        "formatters": {
            "text": {
                "format": "%(asctime)s %(levelname)s %(name)s [request=%(request_id)s"
                " task=%(task_id)s] %(message)s"
            },
            "json": {
                "()": "pythonjsonlogger.json.JsonFormatter",
                "fmt": f"{fields} {context}",
                "datefmt": "%Y-%m-%dT%H:%M:%S%z",
                "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
            },
        },
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": log_format,
                "filters": ["context"],
            }
        },
        "root": {"handlers": ["console"], "level": level},
    }
