"""The alert rules as Prometheus reads them: promtool checks the file and runs its unit tests
(deploy/prometheus/alerts_test.yaml), in which each insight fires on the series that show its
problem and not on the same series without it."""

import shutil
import subprocess

import pytest
from django.conf import settings

RULES = settings.BASE_DIR / "deploy" / "prometheus"

pytestmark = pytest.mark.skipif(
    shutil.which("promtool") is None,
    reason="no promtool: apt-get install prometheus (.ci/run does)",
)


def promtool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["promtool", *args], capture_output=True, text=True, check=False)


def test_prometheus_accepts_the_alert_rules():
    result = promtool("check", "rules", str(RULES / "alerts.yaml"))
    assert result.returncode == 0, result.stdout + result.stderr


def test_each_alert_fires_on_its_problem_and_only_then():
    result = promtool("test", "rules", str(RULES / "alerts_test.yaml"))
    assert result.returncode == 0, result.stdout + result.stderr
