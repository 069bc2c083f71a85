"""A real Celery worker process, on the broker of the settings (Redis in CI), sharing the test
database with the test that starts it."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from portal.celery import app

ROOT = Path(__file__).resolve().parents[2]


def database_url() -> str:
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    credentials = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{credentials}@{db['HOST'] or 'localhost'}:{db['PORT'] or 5432}/{db['NAME']}"


def start_worker(
    tmp_path: Path, *, beat: bool, purge: bool = True, **settings: str
) -> tuple[subprocess.Popen, Path]:
    """A worker in a session of its own (so that a test can kill it whole), in an empty folder
    as a fresh clone would be; `settings` are extra environment variables."""
    if purge:
        app.control.purge()
    tmp_path.mkdir(parents=True, exist_ok=True)
    mail_dir = tmp_path / "mail"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "portal.settings.test",
        "PYTHONPATH": str(ROOT),
        "DATABASE_URL": database_url(),
        "EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend",
        "EMAIL_FILE_PATH": str(mail_dir),
        "PORTAL_CYCLE_SECONDS": "1",
        **settings,
    }
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "portal",
        "worker",
        "--pool=solo",
        "--without-heartbeat",
        "--without-gossip",
        "--without-mingle",
        "--loglevel=INFO",
    ]
    if beat:
        command.append("--beat")
    worker = subprocess.Popen(
        command,
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    return worker, mail_dir


def stop_worker(worker: subprocess.Popen) -> None:
    worker.terminate()
    try:
        output, _ = worker.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        worker.kill()
        output, _ = worker.communicate()
    print(output)


@pytest.fixture
def celery_worker(transactional_db, tmp_path):
    """A worker without beat; yields the folder it writes mail to."""
    worker, mail_dir = start_worker(tmp_path, beat=False)
    try:
        yield mail_dir
    finally:
        stop_worker(worker)


@pytest.fixture
def celery_worker_with_beat(transactional_db, tmp_path):
    """A worker that also runs the periodic tasks (scheduling cycle, status sync) every second
    of real time."""
    worker, _ = start_worker(tmp_path, beat=True)
    try:
        yield worker
    finally:
        stop_worker(worker)


def wait_for(condition, *, timeout: float = 60.0, every: float = 0.2, state=None):
    """Poll until condition() is truthy and return its value; on timeout an AssertionError
    that shows `state()`, what the test was looking at."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"condition not met within {timeout} s; {state() if state else ''}")
