import os
import secrets
import subprocess
import sys

import pytest
from django.conf import settings

from portal.celery import app


def import_settings(module: str, then: str = "", **env) -> subprocess.CompletedProcess:
    """Start Django with these settings in a fresh interpreter, then run the code `then`."""
    code = (
        f"import django, os; os.environ['DJANGO_SETTINGS_MODULE']='{module}'; django.setup()\n"
        f"{then}"
    )
    # As a deployment starts: nothing of this test process's own (the browser tests' async
    # switch among them).
    ours = ("SECRET_KEY", "DATABASE_URL", "DJANGO_ALLOW_ASYNC_UNSAFE")
    clean = {k: v for k, v in os.environ.items() if k not in ours}
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=False,
    )


def test_production_refuses_to_start_without_a_secret_key():
    result = import_settings("portal.settings.production")
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_production_starts_with_a_random_secret_key():
    result = import_settings("portal.settings.production", SECRET_KEY=secrets.token_hex(16))
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    "key",
    [
        "x" * 50,
        "abcde" * 10,
        "django-insecure-q3Zr8vN1xKp0LwT5yHc7JmB2sGd9FeA4uRiX6oVt",
        "q3Zr8vN1xKp0LwT5yHc7JmB2sGd9FeA",  # 31 characters
    ],
)
def test_production_refuses_to_start_with_a_weak_secret_key(key):
    result = import_settings("portal.settings.production", SECRET_KEY=key)
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_the_deploy_check_finds_nothing_in_production_settings_with_a_random_key():
    result = import_settings(
        "portal.settings.production",
        then=(
            "from django.core.management import call_command\n"
            "call_command('check', deploy=True, fail_level='WARNING')"
        ),
        SECRET_KEY=secrets.token_urlsafe(50),
    )
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout


def test_an_unknown_cluster_backend_is_refused_at_start():
    result = import_settings("portal.settings.local", PORTAL_CLUSTER="mesos")
    assert "PORTAL_CLUSTER" in result.stderr


def test_time_is_timezone_aware_utc():
    assert (settings.USE_TZ, settings.TIME_ZONE) == (True, "UTC")


def test_celery_speaks_json_only_and_acknowledges_after_the_task():
    conf = app.conf
    assert (conf.task_serializer, conf.accept_content) == ("json", ["json"])
    assert conf.task_acks_late and conf.task_reject_on_worker_lost


def test_single_sign_on_is_offered_when_an_oidc_issuer_is_configured():
    result = import_settings(
        "portal.settings.local",
        then=(
            "from django.conf import settings\n"
            "app = settings.SOCIALACCOUNT_PROVIDERS['openid_connect']['APPS'][0]\n"
            "print(app['settings']['server_url'], app['client_id'])"
        ),
        OIDC_SERVER_URL="https://login.example.com",
        OIDC_CLIENT_ID="gpu",
    )
    assert result.stdout.split() == ["https://login.example.com", "gpu"], result.stderr
