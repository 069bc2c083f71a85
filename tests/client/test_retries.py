"""gpuctl asks a busy portal again: after a 429 (any request: the throttle answers before the
request runs) or a 503 (requests that may be sent twice), when its Retry-After (seconds or an
HTTP date) says, a few times at most and never after a wait over WAIT_MAX. Against a local
HTTP server that answers as a busy portal would, and against the live server's throttle."""

import json
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from gpuctl.api import ATTEMPTS, WAIT_MAX

NODES = "/api/v1/operator/nodes/"
PAGE = {"count": 1, "next": None, "previous": None, "results": [{"name": "dgx-01"}]}
THROTTLED = {"error": {"code": "throttled", "message": "Request was throttled."}}
BUSY = {"error": {"code": "unavailable", "message": "The cluster did not answer."}}


@pytest.fixture
def portal(httpserver, gpuctl):
    """gpuctl pointed at the local server (GPUCTL_URL and GPUCTL_TOKEN); run(*args)."""
    httpserver.no_handler_status_code = 418

    def run(*args: str):
        env = {"GPUCTL_URL": httpserver.url_for("/").rstrip("/"), "GPUCTL_TOKEN": "gpc_test"}
        return gpuctl(*args, env=env)

    yield run
    httpserver.check_assertions()


def _answers(httpserver, path: str, *answers, method: str = "GET") -> None:
    """Each request to ``path``, in order, answered (status, Retry-After or None)."""
    for status, retry_after in answers:
        headers = {} if retry_after is None else {"Retry-After": retry_after}
        body = PAGE if status == 200 else THROTTLED if status == 429 else BUSY
        httpserver.expect_ordered_request(path, method=method).respond_with_json(
            body, status=status, headers=headers
        )


def _requests(httpserver) -> int:
    return len(httpserver.log)


def test_a_429_is_waited_out_and_the_request_sent_again(httpserver, portal):
    _answers(httpserver, NODES, (429, "0"), (200, None))
    result = portal("admin", "nodes", "ls", "-o", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == PAGE["results"] and _requests(httpserver) == 2
    assert "The portal is busy (429): asking again in 0 s (2/4)." in result.stderr


def test_a_retry_after_given_as_an_http_date_is_waited_for(httpserver, portal):
    past = format_datetime(datetime.now(UTC) - timedelta(seconds=5), usegmt=True)
    _answers(httpserver, NODES, (429, past), (200, None))
    assert portal("admin", "nodes", "ls").exit_code == 0
    assert _requests(httpserver) == 2


def test_a_429_without_retry_after_is_sent_again_after_a_second(httpserver, portal):
    _answers(httpserver, NODES, (429, None), (200, None))
    result = portal("admin", "nodes", "ls")
    assert result.exit_code == 0 and "asking again in 1 s" in result.stderr


def test_a_portal_busy_every_time_is_asked_a_few_times_then_its_refusal_told(httpserver, portal):
    _answers(httpserver, NODES, *[(429, "0")] * ATTEMPTS)
    result = portal("admin", "nodes", "ls")
    assert (result.exit_code, _requests(httpserver)) == (1, ATTEMPTS)
    assert "Request was throttled. (429 throttled)" in result.stderr


def test_a_retry_after_longer_than_the_longest_wait_is_told_at_once(httpserver, portal):
    _answers(httpserver, NODES, (429, str(int(WAIT_MAX) + 1)))
    result = portal("admin", "nodes", "ls")
    assert (result.exit_code, _requests(httpserver)) == (1, 1)


def test_a_503_to_a_read_is_sent_again(httpserver, portal):
    _answers(httpserver, NODES, (503, "0"), (200, None))
    assert portal("admin", "nodes", "ls").exit_code == 0
    assert _requests(httpserver) == 2


def test_a_503_to_a_post_is_not_sent_again_it_may_have_been_done(httpserver, portal):
    _answers(httpserver, f"{NODES}dgx-01/cordon/", (503, "0"), method="POST")
    result = portal("admin", "nodes", "cordon", "dgx-01")
    assert (result.exit_code, _requests(httpserver)) == (4, 1)


def test_a_429_to_a_post_is_sent_again_nothing_was_done(httpserver, portal):
    path = f"{NODES}dgx-01/cordon/"
    _answers(httpserver, path, (429, "0"), method="POST")
    httpserver.expect_ordered_request(path, method="POST").respond_with_json(
        {"name": "dgx-01", "cordoned": True}
    )
    assert portal("admin", "nodes", "cordon", "dgx-01").exit_code == 0
    assert _requests(httpserver) == 2


def test_followed_logs_are_asked_again_after_a_429(httpserver, portal):
    logs = "/api/v1/organizations/acme/projects/ai-dev/workloads/train/logs/"
    _answers(httpserver, logs, (429, "0"))
    httpserver.expect_ordered_request(logs).respond_with_data("step 1\n", content_type="text/plain")
    result = portal("logs", "train", "--org", "acme", "-p", "ai-dev")
    assert (result.exit_code, result.stdout) == (0, "step 1\n")


@pytest.mark.django_db(transaction=True)
def test_a_token_over_the_live_servers_rate_gets_its_answers_all_the_same(
    gpuctl, live_server, secret, settings
):
    """One request a second: gpuctl's three requests of `ls` without a context (the token's
    organization, its project, the workloads) meet the throttle, wait and go on."""
    settings.PORTAL_TOKEN_THROTTLE_RATE = "1/s"
    env = {"GPUCTL_URL": live_server.url, "GPUCTL_TOKEN": secret}
    for _ in range(2):
        result = gpuctl("ls", "-p", "ai-dev", "-o", "json", env=env)
        assert result.exit_code == 0, result.output
        assert {w["project"] for w in json.loads(result.stdout)} == {"ai-dev"}
