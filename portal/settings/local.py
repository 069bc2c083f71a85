"""Development and the demo: debug on, e-mails printed, a development secret."""

import os

from .base import *  # noqa: F403
from .base import env_bool

DEBUG = env_bool("DEBUG", True)
SECRET_KEY = os.environ.get("SECRET_KEY") or "dev-only-insecure-secret-key-change-me"
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
ACCOUNT_DEFAULT_HTTP_PROTOCOL = os.environ.get("ACCOUNT_DEFAULT_HTTP_PROTOCOL", "http")
# /metrics for a local Prometheus: `Authorization: Bearer dev-metrics-token`.
PORTAL_METRICS_TOKEN = os.environ.get("PORTAL_METRICS_TOKEN") or "dev-metrics-token"
