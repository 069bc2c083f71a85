"""A single submission's statements are locked: the token, the project with the caller's role,
the tiers, the clock and the budget check, the inserts, and the cycle request, however warm
the catalog. With the catalog cached (PORTAL_SUBMISSION_CATALOG_SECONDS), its reads go."""

import pytest
from django.core.cache import cache

from .test_workloads import BODY, URL

pytestmark = pytest.mark.django_db

# token, project (with the role), tiers, simulated clock, budgets, the workload's insert in its
# savepoint (3), its event, its audit event, the transaction's savepoint (2), the cycle request,
# whether any webhook endpoint is active (the event's delivery task is queued only then)
CACHED = 14
# and, the catalog not cached: node shapes, GPU classes, pools' topology, the clusters'
# regions, quota grants, approved increases to come
UNCACHED = CACHED + 6


@pytest.fixture
def client(ready, token_for, acme, django_capture_on_commit_callbacks):
    _, client = token_for(ready["member"], acme)
    with django_capture_on_commit_callbacks(execute=True):  # the cycle's state row exists
        assert client.post(URL, {**BODY, "name": "warm"}, format="json").status_code == 201
    return client


def _submit(client, name: str) -> None:
    assert client.post(URL, {**BODY, "name": name}, format="json").status_code == 201


@pytest.fixture
def catalog_cached(settings):
    settings.PORTAL_SUBMISSION_CATALOG_SECONDS = 5
    cache.clear()
    yield
    cache.clear()


def test_a_submission_with_the_catalog_cached_takes_the_locked_statements(
    client, catalog_cached, django_assert_num_queries, django_capture_on_commit_callbacks
):
    _submit(client, "fills-the-cache")
    with django_assert_num_queries(CACHED), django_capture_on_commit_callbacks(execute=True):
        _submit(client, "counted")


def test_a_submission_reading_the_catalog_takes_the_locked_statements(
    client, django_assert_num_queries, django_capture_on_commit_callbacks
):
    with django_assert_num_queries(UNCACHED), django_capture_on_commit_callbacks(execute=True):
        _submit(client, "counted")
