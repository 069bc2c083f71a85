"""The test suite: fast hashing, in-memory e-mail, a file database a worker can share."""

import os

from portal.broker import embedded_broker

from .base import *  # noqa: F403
from .base import BASE_DIR, DATABASES, celery_queues

SECRET_KEY = "test-only-secret-key-not-for-production-use"
DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# A worker process started by a test sets EMAIL_BACKEND to write its mail where the test reads.
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.locmem.EmailBackend")
ACCOUNT_DEFAULT_HTTP_PROTOCOL = "http"
# SQLite test databases live in a file, so a Celery worker process can open the same one.
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["TEST"] = {"NAME": str(BASE_DIR / "var" / "test.sqlite3")}
DATABASES["default"]["CONN_MAX_AGE"] = 0
# A test's rows are uncommitted, which another connection would not see.
PORTAL_METER_CONNECTIONS = 1
# The embedded broker in a file of its own, not the demo's (a worker a test starts opens the same).
if not os.environ.get("CELERY_BROKER_URL"):
    CELERY_BROKER_URL = f"sqlite:///{BASE_DIR / 'var' / 'test-broker.sqlite3'}"
    CELERY_BROKER_TRANSPORT, CELERY_BROKER_TRANSPORT_OPTIONS = embedded_broker(CELERY_BROKER_URL)
# Broker queues of their own per test process (pytest-xdist runs several): a Celery worker that a
# test starts inherits the names, so it only takes the tasks of its own process's tests.
CELERY_TASK_DEFAULT_QUEUE, CELERY_TASK_QUEUES, CELERY_TASK_ROUTES = celery_queues(
    f"portal-test-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-"
)
# Every browser test signs in from 127.0.0.1 and signs up the same addresses, and a Redis cache
# outlives each test (and each run): allauth's rate limits would refuse the suite itself.
ACCOUNT_RATE_LIMITS = False
# Each submission reads the catalog it is checked against: a test that changes a tier or a
# quota sees it at once (tests of the cached path turn it on).
PORTAL_SUBMISSION_CATALOG_SECONDS = 0
# The books of the month under way are computed on each request, for the same reason.
PORTAL_BOOKS_REFRESH_SECONDS = 0
