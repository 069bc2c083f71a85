"""List endpoints lock their query count: a list takes as many queries for many rows as for
one, so that an N+1 fails a test (as netbox's ``utilities/testing/query_counts.py`` does).

Each app's ``api/test_query_counts.py`` names its lists, the queries each takes, and how to add
rows to all of them; ``assert_list_queries`` does the rest."""

from collections.abc import Callable

from django.db import connection
from django.test.utils import CaptureQueriesContext


def rows_in(response) -> int:
    """How many rows a list answers: a page's results, or the JSON list itself."""
    body = response.json()
    return len(body["results"]) if isinstance(body, dict) else len(body)


def _read(client, url: str | Callable[[], str], rows: Callable) -> tuple[str, list[str], int]:
    url = url() if callable(url) else url
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return url, [query["sql"] for query in captured.captured_queries], rows(response)


def assert_list_queries(
    client,
    url: str | Callable[[], str],
    *,
    add_rows: Callable[[int], object],
    queries: int,
    rows: Callable = rows_in,
    more: int = 5,
) -> None:
    """``url`` answers a row, then ``more`` rows more, in ``queries`` queries each time.

    ``add_rows(n)`` adds n rows to the list; ``rows(response)`` counts the rows answered (it
    must grow, or the test proves nothing); ``url`` may be a function, for a list whose address
    names rows that adding rows makes again. The first read warms the session and content-type
    caches and is not counted."""
    add_rows(1)
    _read(client, url, rows)
    _, few, listed = _read(client, url, rows)
    add_rows(more)
    url, many, listed_more = _read(client, url, rows)
    assert listed_more > listed, f"{url}: {more} rows more, none more listed"
    counted = f"{len(few)} queries, then {len(many)} for {more} rows more (locked at {queries})"
    assert (len(few), len(many)) == (queries, queries), f"{url}: {counted}: {many}"
