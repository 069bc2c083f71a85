"""What gpuctl exits with, and how it tells a person why: never a traceback.

0 success; 1 the API refused (a 4xx other than authentication); 2 bad usage (Click's own code);
3 authentication (no token, or one the API does not take: 401, 403); 4 the portal could not be
reached or failed (a network error, a 5xx); 5 a wait ended without the awaited state (the
workload ended otherwise, or the timeout passed)."""

import click
from rich.console import Console

REFUSED = 1
USAGE = 2
AUTH = 3
UNREACHABLE = 4
WAIT_FAILED = 5

stderr = Console(stderr=True, highlight=False, soft_wrap=True)


class GpuctlError(click.ClickException):
    """A failure Click prints (through ``show``) and exits with ``exit_code``."""

    exit_code = REFUSED

    def __init__(self, message: str, *, exit_code: int | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code

    def show(self, file=None) -> None:
        stderr.print(f"[bold red]error:[/] {self.format_message()}", markup=True)


class ApiError(GpuctlError):
    """The API answered with an error: its status, code, message and field errors."""

    def __init__(self, status: int, body: object):
        error = body.get("error", {}) if isinstance(body, dict) else {}
        self.status = status
        self.code = error.get("code", "error") if isinstance(error, dict) else "error"
        self.fields = error.get("fields") or {} if isinstance(error, dict) else {}
        self.details = error.get("details") if isinstance(error, dict) else None
        message = error.get("message") if isinstance(error, dict) else None
        super().__init__(
            message or f"The portal answered {status}.",
            exit_code=AUTH if status in (401, 403) else REFUSED,
        )

    def show(self, file=None) -> None:
        # With field errors the message only repeats the first: the fields say it all.
        headline = "the portal refused it:" if self.fields else self.message
        stderr.print(f"[bold red]error:[/] {headline} [dim]({self.status} {self.code})[/]")
        for field, messages in self.fields.items():
            for message in messages if isinstance(messages, list) else [messages]:
                stderr.print(f"  [yellow]{field}[/]: {message}", markup=True)
        if self.status == 401:
            stderr.print("  Log in again: gpuctl login URL (or set GPUCTL_TOKEN).")


class Unreachable(GpuctlError):
    exit_code = UNREACHABLE


class NotLoggedIn(GpuctlError):
    exit_code = AUTH


class WaitFailed(GpuctlError):
    exit_code = WAIT_FAILED
