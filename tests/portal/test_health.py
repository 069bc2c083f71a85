"""/healthz says the process is up and reads nothing; /readyz says whether it can serve: the
database and the broker answer, every migration is applied; 503 naming what failed."""

import pytest
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder


def test_liveness_answers_without_the_database(client):
    # No django_db mark: any query would fail the test.
    response = client.get("/healthz")
    assert (response.status_code, response.json()) == (200, {"status": "ok"})


def test_probes_answer_whatever_host_a_pod_is_called_by(client):
    assert client.get("/healthz", HTTP_HOST="10.1.2.3:8000").status_code == 200


@pytest.mark.django_db
def test_readiness_answers_ok_when_database_broker_and_migrations_are(client):
    response = client.get("/readyz")
    assert (response.status_code, response.json()) == (
        200,
        {"status": "ok", "checks": {"database": "ok", "broker": "ok", "migrations": "ok"}},
    )


@pytest.mark.django_db
def test_readiness_fails_naming_the_broker_when_it_is_unreachable(client, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    response = client.get("/readyz")
    body = response.json()
    assert (response.status_code, body["status"], body["checks"]["database"]) == (
        503,
        "unavailable",
        "ok",
    )
    assert body["checks"]["broker"].startswith("broker unreachable:")


@pytest.mark.django_db
def test_readiness_fails_naming_a_migration_not_applied(client):
    recorder = MigrationRecorder(connection)
    latest = recorder.migration_qs.filter(app="scheduling").order_by("-id").first()
    latest.delete()
    response = client.get("/readyz")
    assert (response.status_code, response.json()["checks"]["migrations"]) == (
        503,
        f"1 migration(s) not applied: scheduling.{latest.name}",
    )
