"""Schemathesis against the operator API as an operator (conftest.py: the demo, the run)."""

import pytest

from .conftest import schemathesis

pytestmark = pytest.mark.django_db(transaction=True)


def test_schemathesis_finds_no_failure_in_the_operator_api(live_server, demo, tmp_path):
    """As an operator, with every check but `ignored_auth`: called without credentials, the
    operator API answers 404 (it does not exist for such a caller), not the 401 or 403 that
    check expects; tests/*/api/test_operator_permission_matrix.py hold that."""
    _, operator_token, config = demo
    result = schemathesis(
        live_server.url,
        config,
        tmp_path,
        "--include-tag",
        "operator",
        "--checks",
        "all",
        "--exclude-checks",
        "ignored_auth",
        "--header",
        f"Authorization: Bearer {operator_token}",
    )
    assert result.returncode == 0, result.stdout[-30000:] + result.stderr[-5000:]
