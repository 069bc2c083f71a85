"""Schemathesis against the tenant API as acme's owner (conftest.py: the demo, the run)."""

import pytest

from .conftest import schemathesis

pytestmark = pytest.mark.django_db(transaction=True)


def test_schemathesis_finds_no_failure_with_every_check(live_server, demo, tmp_path):
    token, _, config = demo
    result = schemathesis(
        live_server.url,
        config,
        tmp_path,
        "--exclude-tag",
        "operator",
        "--checks",
        "all",
        "--header",
        f"Authorization: Bearer {token}",
    )
    assert result.returncode == 0, result.stdout[-30000:] + result.stderr[-5000:]
