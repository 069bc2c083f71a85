"""Production: refuses to start without a real secret; secure cookies and HSTS."""

import math
import os
from collections import Counter

from django.core.exceptions import ImproperlyConfigured

from .base import *  # noqa: F403
from .base import LOG_LEVEL, MIDDLEWARE, env_bool, logging_config

SECRET_KEY_MIN_LENGTH = 32
# Shannon entropy of the key's characters: a random key of 32 or more characters from 16 or
# more symbols (hex, base64, Django's get_random_secret_key) has about 3.5 to 5.5 bits each;
# "aaaa…" has 0, "abcde" repeated 2.3.
SECRET_KEY_MIN_BITS_PER_CHARACTER = 2.5


def bits_per_character(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


SECRET_KEY = os.environ.get("SECRET_KEY", "")
if (
    len(SECRET_KEY) < SECRET_KEY_MIN_LENGTH
    or SECRET_KEY.startswith("django-insecure-")
    or bits_per_character(SECRET_KEY) < SECRET_KEY_MIN_BITS_PER_CHARACTER
):
    raise ImproperlyConfigured(
        f"SECRET_KEY must be set to at least {SECRET_KEY_MIN_LENGTH} random characters, e.g."
        " python -c 'import secrets; print(secrets.token_urlsafe(50))'"
    )

DEBUG = False
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SECURE_CONTENT_TYPE_NOSNIFF = True
# Static files served by the application itself (compressed, cache-busted names).
_SECURITY = MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1
MIDDLEWARE = [
    *MIDDLEWARE[:_SECURITY],
    "whitenoise.middleware.WhiteNoiseMiddleware",
    *MIDDLEWARE[_SECURITY:],
]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

# JSON lines, one per record, with request id, task id, user and organization.
PORTAL_LOG_FORMAT = os.environ.get("PORTAL_LOG_FORMAT", "json")
LOGGING = logging_config(log_format=PORTAL_LOG_FORMAT, level=LOG_LEVEL)
# No default token: without PORTAL_METRICS_TOKEN, /metrics answers 404 (base.py).
