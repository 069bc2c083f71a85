"""The portal's REST API over HTTP: bearer token, JSON, the one error shape, every page of a
list; a busy portal's answer (429, 503) waited out and asked again, within bounds."""

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

from . import __version__
from .errors import ApiError, Unreachable, stderr

PREFIX = "/api/v1/"
TIMEOUT = httpx.Timeout(30.0, connect=10.0)
PAGE_SIZE = 500  # the API's largest page

# Asking again: at most this many attempts in all, never a wait longer than WAIT_MAX seconds
# (a longer Retry-After is an answer: the error is told at once); without Retry-After, waits
# of 1, 2, 4 s.
ATTEMPTS = 4
WAIT_MAX = 30.0
# A 429 is answered before the request runs (the API's throttle; nothing was done): any
# request is sent again. A 503 may come after the work began: only requests that may be sent
# twice are.
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})


def retry_wait(response: httpx.Response, *, attempt: int, now: datetime) -> float | None:
    """How long to wait before sending the request of ``response`` again (its ``attempt``-th
    answer): None when it is not to be sent again."""
    status, method = response.status_code, response.request.method
    if attempt >= ATTEMPTS or not (status == 429 or (status == 503 and method in IDEMPOTENT)):
        return None
    given = response.headers.get("Retry-After", "").strip()
    if given.isdigit():
        wait = float(given)
    elif given:
        try:
            wait = max((parsedate_to_datetime(given) - now).total_seconds(), 0.0)
        except (TypeError, ValueError):  # neither seconds nor an HTTP date: our own pace
            wait = float(2 ** (attempt - 1))
    else:
        wait = float(2 ** (attempt - 1))
    return wait if wait <= WAIT_MAX else None


class Api:
    def __init__(self, url: str, token: str, *, sleep: Callable[[float], None] = time.sleep):
        self.sleep = sleep
        self.url = url.rstrip("/")
        self.client = httpx.Client(
            base_url=self.url + PREFIX,
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/json",
                "User-Agent": f"gpuctl/{__version__}",
            },
            timeout=TIMEOUT,
        )

    def close(self) -> None:
        self.client.close()

    def _send(self, method: str, path: str, **kwargs) -> httpx.Response:
        attempt = 1
        while True:
            try:
                response = self.client.request(method, path, **kwargs)
            except httpx.HTTPError as error:
                raise Unreachable(f"Cannot reach {self.url}: {error}") from error
            if not self._waited(response, attempt=attempt):
                return _checked(response)
            attempt += 1

    def _waited(self, response: httpx.Response, *, attempt: int) -> bool:
        """Whether the answer is one to ask again after a wait; if so, waited (and said so on
        stderr, where scripts do not read)."""
        wait = retry_wait(response, attempt=attempt, now=datetime.now(UTC))
        if wait is None:
            return False
        stderr.print(
            f"[dim]The portal is busy ({response.status_code}): asking again in {wait:.0f} s"
            f" ({attempt + 1}/{ATTEMPTS}).[/]"
        )
        self.sleep(wait)
        return True

    def get(self, path: str, **params) -> object:
        return self._send("GET", path, params=_present(params)).json()

    def post(self, path: str, body: object = None) -> object:
        response = self._send("POST", path, json=body)
        return response.json() if response.content else None

    def put(self, path: str, body: object) -> object:
        return self._send("PUT", path, json=body).json()

    def patch(self, path: str, body: object) -> object:
        return self._send("PATCH", path, json=body).json()

    def delete(self, path: str) -> None:
        self._send("DELETE", path)

    def list(self, path: str, *, limit: int | None = None, paged: bool = True, **params) -> list:
        """Every item of a paginated list, up to ``limit`` (``paged=False``: a list the API
        answers whole, as a JSON array)."""
        if not paged:
            return self.get(path, **params)
        page, items = 1, []
        while True:
            answer = self.get(path, page=page, page_size=PAGE_SIZE, **params)
            items.extend(answer["results"])
            if not answer.get("next") or (limit and len(items) >= limit):
                return items[:limit] if limit else items
            page += 1

    def download(self, path: str) -> tuple[bytes, str | None]:
        """A file the API answers (an export): its bytes and the file name it suggests."""
        response = self._send("GET", path, headers={"Accept": "*/*"})
        disposition = response.headers.get("Content-Disposition", "")
        name = (
            disposition.split("filename=", 1)[1].strip('"; ')
            if "filename=" in disposition
            else None
        )
        return response.content, name

    @contextmanager
    def stream_lines(self, path: str, **params) -> Iterator[httpx.Response]:
        """A ``text/plain`` answer, its lines read as they arrive (``iter_lines()``; no read
        timeout: a followed log may stay quiet)."""
        attempt = 1
        try:
            while True:
                with self.client.stream(
                    "GET",
                    path,
                    params=_present(params),
                    headers={"Accept": "text/plain"},
                    timeout=httpx.Timeout(None, connect=10.0),
                ) as response:
                    if response.is_error:
                        response.read()
                        if self._waited(response, attempt=attempt):
                            attempt += 1
                            continue
                        _checked(response)
                    yield response
                    return
        except httpx.HTTPError as error:
            raise Unreachable(f"Cannot reach {self.url}: {error}") from error


def _present(params: dict) -> dict:
    return {name: value for name, value in params.items() if value is not None}


def _checked(response: httpx.Response) -> httpx.Response:
    if response.is_success:
        return response
    if response.status_code >= 500:
        raise Unreachable(
            f"The portal failed ({response.status_code}) on {response.request.url.path}; "
            "try again, or tell its operators."
        )
    try:
        body = response.json()
    except ValueError:
        body = {"error": {"message": response.text[:200] or response.reason_phrase}}
    raise ApiError(response.status_code, body)
