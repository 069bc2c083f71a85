"""Settings shared by every environment; everything that differs comes from the environment."""

import json
import os
from decimal import Decimal
from pathlib import Path

import dj_database_url
from kombu import Queue

from portal.broker import embedded_broker
from portal.logs import logging_config

BASE_DIR = Path(__file__).resolve().parent.parent.parent


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DEBUG", False)
SECRET_KEY = os.environ.get("SECRET_KEY", "")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_celery_beat",
    "django_htmx",
    "allauth",
    "allauth.account",
    "allauth.socialaccount",
    "allauth.socialaccount.providers.openid_connect",
    "portal",
    "tenants",
    "scheduling",
    "billing",
    "webhooks",
]

MIDDLEWARE = [
    # First: every line logged while serving carries the request id; probes answer before
    # host validation and the HTTPS redirect (see portal/views.py).
    "portal.logs.RequestIdMiddleware",
    "portal.views.ProbeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "portal.views.StyledMethodNotAllowed",
]

ROOT_URLCONF = "portal.urls"
WSGI_APPLICATION = "portal.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "portal.health.operator_banner",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{BASE_DIR / 'var' / 'portal.sqlite3'}"),
        conn_max_age=int(os.environ.get("DATABASE_CONN_MAX_AGE", "60")),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The demo's web server, worker and beat share one SQLite file: each transaction takes the
    # write lock when it begins (no lock upgrade that could deadlock) and waits for the others.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"timeout": 30, "transaction_mode": "IMMEDIATE"}
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CACHES = {
    "default": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": os.environ["CACHE_URL"],
        }
        if os.environ.get("CACHE_URL")
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}

AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "var" / "static"
LOGIN_URL = "account_login"
LOGIN_REDIRECT_URL = "console:home"

# Accounts (django-allauth): e-mail is the identity; it must be verified before the first login.
ACCOUNT_LOGIN_METHODS = {"email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "password1*", "password2*"]
ACCOUNT_UNIQUE_EMAIL = True
# Users are named by their e-mail address, never by the internal username.
ACCOUNT_USER_DISPLAY = "tenants.accounts.user_display"
# allauth's mails leave through the portal's one mail helper (portal/mail.py).
ACCOUNT_ADAPTER = "tenants.accounts.AccountAdapter"
ACCOUNT_EMAIL_VERIFICATION = os.environ.get("ACCOUNT_EMAIL_VERIFICATION", "mandatory")
ACCOUNT_LOGOUT_ON_PASSWORD_CHANGE = False
ACCOUNT_DEFAULT_HTTP_PROTOCOL = os.environ.get("ACCOUNT_DEFAULT_HTTP_PROTOCOL", "https")
SOCIALACCOUNT_ONLY = False


def oidc_apps(environ=os.environ) -> list[dict]:
    """Single sign-on (docs/operators/sso.md): the OpenID Connect providers of
    PORTAL_OIDC_PROVIDERS (a JSON list of {"id", "name", "server_url", "client_id", "secret"}),
    and the one of OIDC_SERVER_URL and OIDC_CLIENT_ID (OIDC_CLIENT_SECRET, OIDC_PROVIDER_ID,
    OIDC_PROVIDER_NAME). None by default."""
    given = json.loads(environ.get("PORTAL_OIDC_PROVIDERS") or "[]")
    if environ.get("OIDC_SERVER_URL") and environ.get("OIDC_CLIENT_ID"):
        given.append(
            {
                "id": environ.get("OIDC_PROVIDER_ID", "sso"),
                "name": environ.get("OIDC_PROVIDER_NAME", "Single sign-on"),
                "server_url": environ["OIDC_SERVER_URL"],
                "client_id": environ["OIDC_CLIENT_ID"],
                "secret": environ.get("OIDC_CLIENT_SECRET", ""),
            }
        )
    return [
        {
            "provider_id": provider["id"],
            "name": provider.get("name", provider["id"]),
            "client_id": provider["client_id"],
            "secret": provider.get("secret", ""),
            "settings": {"server_url": provider["server_url"], "oauth_pkce_enabled": True},
        }
        for provider in given
    ]


SOCIALACCOUNT_PROVIDERS = {"openid_connect": {"APPS": apps}} if (apps := oidc_apps()) else {}
# A provider's verified e-mail address signs in, and is connected to, the local account of that
# address: only providers the operator configured are trusted, and they verify addresses.
SOCIALACCOUNT_EMAIL_AUTHENTICATION = True
SOCIALACCOUNT_EMAIL_AUTHENTICATION_AUTO_CONNECT = True

EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend")
EMAIL_FILE_PATH = os.environ.get("EMAIL_FILE_PATH", str(BASE_DIR / "var" / "mail"))
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", "25"))
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "GPU Cloud <noreply@localhost>")
# Absolute links in e-mails sent by the worker, which has no request to build them from.
PORTAL_BASE_URL = os.environ.get("PORTAL_BASE_URL", "http://127.0.0.1:8000")

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "tenants.api.authentication.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["tenants.api.permissions.TokenScopeAllows"],
    "DEFAULT_THROTTLE_CLASSES": ["tenants.api.throttling.TokenRateThrottle"],
    "DEFAULT_PAGINATION_CLASS": "portal.api.pagination.PagePagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "portal.api.filters.OrderingFilter",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "portal.api.errors.error_response_handler",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["portal.api.parsers.JsonParser"],
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
# The largest request body (API or form) read: more is a 413 in the API's error shape.
DATA_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024
# Requests a token may make, e.g. "600/min"; session (console) clients are not throttled.
PORTAL_TOKEN_THROTTLE_RATE = os.environ.get("PORTAL_TOKEN_THROTTLE_RATE", "1200/min")

SPECTACULAR_SETTINGS = {
    # Swagger UI and ReDoc from the portal's own static files: many GPU clusters have no
    # internet, and a CDN would leave /api/docs/ blank.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "TITLE": "GPU Cloud Portal API",
    "DESCRIPTION": "Tenancy, GPU quotas, workloads and billing of a multi-tenant GPU cloud.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": "/api/v1",
    "ENUM_NAME_OVERRIDES": {
        "RoleEnum": "tenants.models.Role",
        "WorkloadKindEnum": "scheduling.models.Workload.Kind",
        "CatalogKindEnum": "billing.models.CatalogItem.Kind",
        "WebhookEventTypeEnum": "webhooks.models.EventType",
        "WebhookDeliveryStateEnum": "webhooks.models.Delivery.State",
        # The tenant API's and the operator API's outputs share these.
        "InvoiceOutputStateEnum": "billing.models.Invoice.State",
        "OrderOutputStateEnum": "billing.models.Order.State",
        "QuotaRequestOutputStateEnum": "scheduling.models.QuotaRequest.State",
        "ReservationOutputStateEnum": "scheduling.models.Reservation.State",
        # The workload list's and the workload detail's outputs share it.
        "WorkloadOutputStateEnum": "scheduling.models.Workload.State",
        "ScopeEnum": "tenants.models.ApiToken.TENANT_SCOPES",
    },
    # A PATCH body's required fields stay required (members: `role`), as the views demand.
    "COMPONENT_SPLIT_PATCH": False,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "portal.api.schema.error_responses",
    ],
}

# Celery: JSON only, acknowledged after the task ran so a killed worker loses nothing.
# The default broker needs no server, for the demo and the tests: a SQLite file (var/), through
# kombu's SQLAlchemy transport as portal/broker.py adapts it (kombu's file-system transport, the
# default until issue 21, let the worker read half-written messages and die). Redis in production.
CELERY_BROKER_URL = os.environ.get(
    "CELERY_BROKER_URL", f"sqlite:///{BASE_DIR / 'var' / 'broker.sqlite3'}"
)
# No task runs longer than this (seconds): the worker kills it, and the broker may redeliver it.
CELERY_TASK_TIME_LIMIT = int(os.environ.get("CELERY_TASK_TIME_LIMIT", "300"))
if CELERY_BROKER_URL.startswith("sqlite:"):
    CELERY_BROKER_TRANSPORT, CELERY_BROKER_TRANSPORT_OPTIONS = embedded_broker(CELERY_BROKER_URL)
else:
    # Redis redelivers a task whose worker died once this has passed since it was taken: the
    # longest task's limit and a margin, so a live task is never run twice. The reconciler
    # (PORTAL_RECONCILE_SECONDS) finishes a lost launch or teardown well before that.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_TASK_TIME_LIMIT + 60}
CELERY_RESULT_BACKEND = None
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_SERIALIZER = "json"
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TIMEZONE = "UTC"
# Periodic tasks live in the database (django-celery-beat): no schedule file, and operators see
# and change them in admin. CELERY_BEAT_SCHEDULE only installs the missing ones.
CELERY_BEAT_SCHEDULER = "portal.beat:DefaultsOnlyDatabaseScheduler"

# One queue per kind of work, so that a burst of one kind never starves another. A worker
# started without -Q takes them all (the demo); see docs/operators/workers.md.
TASK_QUEUES = {
    "scheduling.tasks.scheduling_cycle": "cycle",
    "scheduling.tasks.workloads_launch": "cluster",
    "scheduling.tasks.workload_objects_delete": "cluster",
    "scheduling.tasks.workloads_sync": "sync",
    "scheduling.tasks.idle_and_runtime_check": "sync",
    "scheduling.tasks.inventory_sync": "sync",
    "scheduling.tasks.cluster_reconcile": "sync",
    "scheduling.tasks.reservations_advance": "sync",
    "scheduling.tasks.quota_requests_advance": "sync",
    "scheduling.tasks.project_provision": "provisioning",
    "scheduling.tasks.project_deprovision": "provisioning",
    "scheduling.tasks.cluster_provision": "provisioning",
    "tenants.tasks.invitation_email_send": "mail",
    "scheduling.tasks.reservation_email_send": "mail",
    "scheduling.tasks.quota_request_email_send": "mail",
    "billing.tasks.order_fulfil": "provisioning",
    "billing.tasks.order_email_send": "mail",
    "billing.tasks.cancellation_charge_record": "sync",
    "billing.tasks.billing_reconcile": "sync",
    "billing.tasks.usage_meter": "sync",
    "billing.tasks.usage_reconcile_yesterday": "sync",
    "billing.tasks.metering_partitions_ensure": "sync",
    "billing.tasks.invoices_draft": "sync",
    "billing.tasks.budgets_check": "sync",
    "billing.tasks.budget_alert_email_send": "mail",
    # Webhook deliveries on a queue of their own: slow receivers never hold up other work.
    "webhooks.tasks.webhook_deliveries_make": "webhooks",
    "webhooks.tasks.webhook_delivery_attempt": "webhooks",
    "webhooks.tasks.webhook_deliveries_due": "webhooks",
    # The worker's heartbeat: on the queue that holds nothing else, so that a backlog of other
    # work does not delay it.
    "portal.tasks.worker_heartbeat": "default",
}


def celery_queues(prefix: str) -> tuple[str, list[Queue], dict]:
    """The default queue, every queue, and each task's route, named with `prefix`."""
    names = ["default", *dict.fromkeys(TASK_QUEUES.values())]
    return (
        f"{prefix}default",
        [Queue(f"{prefix}{name}") for name in names],
        {task: {"queue": f"{prefix}{queue}"} for task, queue in TASK_QUEUES.items()},
    )


CELERY_TASK_DEFAULT_QUEUE, CELERY_TASK_QUEUES, CELERY_TASK_ROUTES = celery_queues("")

PORTAL_CLUSTER = os.environ.get("PORTAL_CLUSTER", "simulated")
# Each cluster's tasks (inventory and status sync, reconciler, provisioning, launches and
# teardowns) on a queue of its own, `cluster-<name>`, that workers must consume (-Q): a slow or
# unreachable cluster then holds up no other's. Off: they share the task's usual queue.
PORTAL_CLUSTER_QUEUES = env_bool("PORTAL_CLUSTER_QUEUES", False)
# A cluster whose inventory could not be read for this long since it was last seen is
# unreachable: its pools take no new work and its running workloads stop being metered at the
# last time it was seen, until it answers again (seconds).
PORTAL_CLUSTER_UNREACHABLE_SECONDS = int(
    os.environ.get("PORTAL_CLUSTER_UNREACHABLE_SECONDS", "300")
)
PORTAL_SIMULATED_CLUSTER = os.environ.get(
    "PORTAL_SIMULATED_CLUSTER", str(BASE_DIR / "deploy" / "clusters" / "demo.yaml")
)
# How long each object write takes on the simulated cluster (seconds), as on a loaded API server.
PORTAL_SIMULATED_LATENCY_SECONDS = float(os.environ.get("PORTAL_SIMULATED_LATENCY_SECONDS", "0"))
# The longest a request following a workload's logs (`?follow=true`) stays open (seconds): it
# holds a web thread that long; the client asks again with `since` to read on.
PORTAL_LOGS_FOLLOW_MAX_SECONDS = int(os.environ.get("PORTAL_LOGS_FOLLOW_MAX_SECONDS", "300"))
# What is kept of each replica's log when a workload's cluster objects are deleted: its last
# lines, at most this many and this many bytes (the bound that comes first wins).
PORTAL_LOGS_KEPT_LINES = int(os.environ.get("PORTAL_LOGS_KEPT_LINES", "1000"))
PORTAL_LOGS_KEPT_BYTES = int(os.environ.get("PORTAL_LOGS_KEPT_BYTES", str(256 * 1024)))
# Prometheus with NVIDIA DCGM exporter metrics, for idle detection on a real cluster.
PORTAL_PROMETHEUS_URL = os.environ.get("PORTAL_PROMETHEUS_URL", "")
# The placement policy of the scheduling engine (see scheduling/engine/policies/).
PORTAL_PLACEMENT_POLICY = os.environ.get("PORTAL_PLACEMENT_POLICY", "fgd_cpu_waste_demand")
# How long work on borrowed capacity runs before its lender may reclaim it (seconds).
PORTAL_RECLAIM_AFTER_SECONDS = int(os.environ.get("PORTAL_RECLAIM_AFTER_SECONDS", "600"))
# How long before a reservation's window its capacity is drained of others' preemptible work,
# unless the reservation sets its own lead time (seconds).
PORTAL_RESERVATION_LEAD_SECONDS = int(os.environ.get("PORTAL_RESERVATION_LEAD_SECONDS", "900"))
# A what-if answers from the state the last cycle left while it is younger than this (seconds)
# and the cluster has not changed since; otherwise from a fresh read of the cluster.
PORTAL_WHAT_IF_MAX_AGE_SECONDS = int(os.environ.get("PORTAL_WHAT_IF_MAX_AGE_SECONDS", "120"))
# Fairness over time: a tenant's past GPU usage counts half as much after this many hours,
# added to its current share in fair-share ordering and reclaim (0: only what runs now counts).
PORTAL_FAIR_SHARE_HALF_LIFE_HOURS = float(
    os.environ.get("PORTAL_FAIR_SHARE_HALF_LIFE_HOURS", "168")
)
# How many times a GPU-second of a class counts in that usage, as "H100-80GB=4,L4=1" (a class
# not named: once).
PORTAL_FAIR_SHARE_CLASS_WEIGHTS = {
    name.strip(): float(weight)
    for name, _, weight in (
        item.partition("=") for item in env_list("PORTAL_FAIR_SHARE_CLASS_WEIGHTS", "")
    )
}
# The catalog's currency (ISO 4217): every price and invoice of the portal is in it.
PORTAL_CURRENCY = os.environ.get("PORTAL_CURRENCY", "EUR")
# The tax rate invoices add to their subtotal (0.19 for 19%).
PORTAL_TAX_RATE = Decimal(os.environ.get("PORTAL_TAX_RATE", "0"))
# The share (percent) of its reservation's price a holder is credited for each GPU-hour of its
# idle reserved GPUs that others' work used (the lending credit; 0 turns it off).
PORTAL_LENDING_CREDIT_PERCENT = Decimal(os.environ.get("PORTAL_LENDING_CREDIT_PERCENT", "50"))
# The operator's books: how the cost of idle GPUs is shared in each organization's showback
# ("apart": kept apart, the operator's; "usage": pro rata to each one's use; "guarantees": to
# the idle capacity each one's reservations and guarantees held).
PORTAL_BOOKS_IDLE_SHARING = os.environ.get("PORTAL_BOOKS_IDLE_SHARING", "apart")
if PORTAL_BOOKS_IDLE_SHARING not in ("apart", "usage", "guarantees"):
    raise ValueError("PORTAL_BOOKS_IDLE_SHARING is apart, usage or guarantees.")
# What an organization sees of its own showback where the operator set nothing for it (admin,
# the operator API): "off", "hours" (its use and share of idle in GPU-hours only) or "cost"
# (and what they cost the operator). The booleans of earlier versions read as cost and off.
_showback = os.environ.get("PORTAL_BOOKS_SHOWBACK", "off").strip().lower()
_showback_booleans = dict.fromkeys(("1", "true", "yes", "on"), "cost") | dict.fromkeys(
    ("0", "false", "no", ""), "off"
)
PORTAL_BOOKS_SHOWBACK = _showback_booleans.get(_showback, _showback)
if PORTAL_BOOKS_SHOWBACK not in ("off", "hours", "cost"):
    raise ValueError("PORTAL_BOOKS_SHOWBACK is off, hours or cost.")
# The books of the month under way (the staff page, the operator API, /metrics) are computed
# again at most this often (seconds); an ended month's are kept until what they read changes.
PORTAL_BOOKS_REFRESH_SECONDS = int(os.environ.get("PORTAL_BOOKS_REFRESH_SECONDS", "300"))
# The longest window one reservation may ask for (hours).
PORTAL_RESERVATION_MAX_HOURS = int(os.environ.get("PORTAL_RESERVATION_MAX_HOURS", "336"))
# An evicted workload goes back to the queue at most this many times, after a backoff that
# starts at PORTAL_EVICTION_BACKOFF_SECONDS and doubles with each eviction.
PORTAL_EVICTIONS_MAX = int(os.environ.get("PORTAL_EVICTIONS_MAX", "3"))
PORTAL_EVICTION_BACKOFF_SECONDS = int(os.environ.get("PORTAL_EVICTION_BACKOFF_SECONDS", "30"))
# How often beat runs the scheduling cycle and follows workloads, in seconds (whole seconds:
# django-celery-beat's intervals are).
PORTAL_CYCLE_SECONDS = int(os.environ.get("PORTAL_CYCLE_SECONDS", "5"))
# How old a waiting workload's queue position and start estimate may grow (seconds): a cycle
# rewrites those that moved only when this long has passed since the last one did (a new
# reason or a first estimate is written at once). 0: every cycle.
PORTAL_PLACES_REFRESH_SECONDS = int(os.environ.get("PORTAL_PLACES_REFRESH_SECONDS", "30"))
# How long submissions reuse the catalog and an organization's quotas they are checked against
# (in the shared cache): a change to tiers, GPU classes, nodes or quotas reaches them within it.
PORTAL_SUBMISSION_CATALOG_SECONDS = int(os.environ.get("PORTAL_SUBMISSION_CATALOG_SECONDS", "5"))
# How often beat sends the worker's heartbeat task (seconds); /healthz/workers reports the worker
# stale after three of these without one taken (portal/health.py).
PORTAL_WORKER_HEARTBEAT_SECONDS = int(os.environ.get("PORTAL_WORKER_HEARTBEAT_SECONDS", "30"))
# How often beat turns placements into usage intervals and rates them.
PORTAL_METER_SECONDS = int(os.environ.get("PORTAL_METER_SECONDS", "60"))
# Database connections that metering uses at once on PostgreSQL, each on its own ranges of
# placements and intervals (catching up after an outage goes about that many times as fast).
PORTAL_METER_CONNECTIONS = int(os.environ.get("PORTAL_METER_CONNECTIONS", "2"))
# How long a workload may stay admitted but not launched, or ended with its objects still in
# the cluster, before the reconciler does the lost task's work (seconds).
PORTAL_RECONCILE_SECONDS = int(os.environ.get("PORTAL_RECONCILE_SECONDS", "60"))
# Webhooks may be sent to private, loopback, link-local and reserved addresses (off: such URLs
# are refused when registered and before each attempt, against SSRF).
PORTAL_WEBHOOKS_ALLOW_PRIVATE = env_bool("PORTAL_WEBHOOKS_ALLOW_PRIVATE", False)
# How long a webhook attempt waits to connect, and for each read of the answer (seconds).
PORTAL_WEBHOOKS_TIMEOUT_SECONDS = float(os.environ.get("PORTAL_WEBHOOKS_TIMEOUT_SECONDS", "5"))
if PORTAL_CLUSTER not in {"simulated", "kubernetes"}:
    raise ValueError(f"PORTAL_CLUSTER must be 'simulated' or 'kubernetes', not {PORTAL_CLUSTER!r}")

# Logs: "text" lines (development) or "json" lines (production's default), each with the
# request id, task id, user and organization (portal/logs.py).
PORTAL_LOG_FORMAT = os.environ.get("PORTAL_LOG_FORMAT", "text")
if PORTAL_LOG_FORMAT not in {"text", "json"}:
    raise ValueError(f"PORTAL_LOG_FORMAT must be 'text' or 'json', not {PORTAL_LOG_FORMAT!r}")
LOG_LEVEL = os.environ.get("LOG_LEVEL", "INFO")
LOGGING = logging_config(log_format=PORTAL_LOG_FORMAT, level=LOG_LEVEL)

# The worker logs through LOGGING too (Celery would otherwise replace the root handler with
# its own, without the request and task ids).
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

# /metrics answers only with `Authorization: Bearer <this>`; unset, it answers 404.
PORTAL_METRICS_TOKEN = os.environ.get("PORTAL_METRICS_TOKEN", "")
# A Celery worker serves its own process metrics on this port when set (same token).
PORTAL_WORKER_METRICS_PORT = int(os.environ.get("PORTAL_WORKER_METRICS_PORT", "0"))


def every(seconds: int, task: str) -> dict:
    """A periodic task whose message expires when the next is due: a run that could not start
    in time is dropped, so a slow pass never piles copies of itself up in the queue."""
    return {"task": task, "schedule": seconds, "options": {"expire_seconds": seconds}}


CELERY_BEAT_SCHEDULE = {
    # A worker took a task: /healthz/workers, /metrics and the operators' banner read it.
    "worker-heartbeat": every(PORTAL_WORKER_HEARTBEAT_SECONDS, "portal.tasks.worker_heartbeat"),
    "scheduling-cycle": every(PORTAL_CYCLE_SECONDS, "scheduling.tasks.scheduling_cycle"),
    "workloads-sync": every(PORTAL_CYCLE_SECONDS, "scheduling.tasks.workloads_sync"),
    "inventory-sync": every(60, "scheduling.tasks.inventory_sync"),
    "idle-and-runtime-check": every(60, "scheduling.tasks.idle_and_runtime_check"),
    # Re-applies priority classes and node labels, repairing drift made by hand.
    "cluster-provision": every(600, "scheduling.tasks.cluster_provision"),
    "cluster-reconcile": every(
        max(1, PORTAL_RECONCILE_SECONDS // 2), "scheduling.tasks.cluster_reconcile"
    ),
    # Opens, completes and expires reservations on time.
    "reservations-advance": every(30, "scheduling.tasks.reservations_advance"),
    # Expires undecided quota requests and reverts temporary increases at their end.
    "quota-requests-advance": every(60, "scheduling.tasks.quota_requests_advance"),
    # Usage intervals from placements, rated into billing records.
    "usage-meter": every(PORTAL_METER_SECONDS, "billing.tasks.usage_meter"),
    # The metering tables' monthly partitions, made months ahead (PostgreSQL).
    "metering-partitions": every(24 * 3600, "billing.tasks.metering_partitions_ensure"),
    # Placed against billed GPU-seconds of the day before, once a day.
    "usage-reconcile": every(24 * 3600, "billing.tasks.usage_reconcile_yesterday"),
    # This month's and last month's invoice drafts, from what is rated.
    "invoices-draft": every(3600, "billing.tasks.invoices_draft"),
    # Budgets' thresholds crossed by this month's spend, mailed once each.
    "budgets-check": every(300, "billing.tasks.budgets_check"),
    # Webhook deliveries due for a retry (or whose attempt was lost) are queued again.
    "webhook-deliveries-due": every(30, "webhooks.tasks.webhook_deliveries_due"),
    # Fulfils orders whose task was lost and charges cancellations whose event was.
    "billing-reconcile": every(
        max(1, PORTAL_RECONCILE_SECONDS // 2), "billing.tasks.billing_reconcile"
    ),
}
