"""The portal's REST API over HTTP: bearer token, JSON, the one error shape, every page of a
list."""

from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from . import __version__
from .errors import ApiError, Unreachable

PREFIX = "/api/v1/"
TIMEOUT = httpx.Timeout(30.0, connect=10.0)
PAGE_SIZE = 500  # the API's largest page


class Api:
    def __init__(self, url: str, token: str):
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
        try:
            response = self.client.request(method, path, **kwargs)
        except httpx.HTTPError as error:
            raise Unreachable(f"Cannot reach {self.url}: {error}") from error
        return _checked(response)

    def get(self, path: str, **params) -> object:
        return self._send("GET", path, params=_present(params)).json()

    def post(self, path: str, body: object = None) -> object:
        response = self._send("POST", path, json=body)
        return response.json() if response.content else None

    def put(self, path: str, body: object) -> object:
        return self._send("PUT", path, json=body).json()

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
        try:
            with self.client.stream(
                "GET",
                path,
                params=_present(params),
                headers={"Accept": "text/plain"},
                timeout=httpx.Timeout(None, connect=10.0),
            ) as response:
                if response.is_error:
                    response.read()
                    _checked(response)
                yield response
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
