"""Throttling, server errors, timeouts and broken connections are retried with backoff;
after the last try the error says it may succeed later."""

import random
import socket
import threading
import time

import pytest
from kubernetes.client import Configuration
from werkzeug import Response

from scheduling.cluster.base import ClusterError
from scheduling.cluster.kubernetes import KubernetesBackend

from .conftest import BASE_DELAY, MAX_ATTEMPTS, status_body

NODES = "/api/v1/nodes"
EMPTY_NODE_LIST = {"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": []}


def test_a_throttled_call_waits_as_long_as_retry_after_says_then_succeeds(
    api_server, backend, delays
):
    api_server.expect_ordered_request(NODES, method="GET").respond_with_json(
        status_body(code=429, reason="TooManyRequests", message="Too many requests"),
        status=429,
        headers={"Retry-After": "3"},
    )
    api_server.expect_ordered_request(NODES, method="GET").respond_with_json(EMPTY_NODE_LIST)
    assert backend.list_nodes() == []
    assert delays == [3.0]


def test_a_server_error_is_retried_after_a_jittered_wait_below_the_first_backoff(
    api_server, backend, delays
):
    api_server.expect_ordered_request(NODES, method="GET").respond_with_json(
        status_body(code=500, reason="InternalError", message="etcdserver: leader changed"),
        status=500,
    )
    api_server.expect_ordered_request(NODES, method="GET").respond_with_json(EMPTY_NODE_LIST)
    backend.list_nodes()
    assert len(api_server.log) == 2
    assert len(delays) == 1 and 0 <= delays[0] <= BASE_DELAY


def test_a_server_that_stays_unavailable_fails_retryable_after_the_last_attempt(
    api_server, backend, delays
):
    api_server.expect_request(NODES, method="GET").respond_with_json(
        status_body(code=503, reason="ServiceUnavailable", message="apiserver is shutting down"),
        status=503,
    )
    with pytest.raises(ClusterError, match="failed 4 times, last: HTTP 503") as raised:
        backend.list_nodes()
    assert (raised.value.status, raised.value.retryable) == (503, True)
    assert len(api_server.log) == MAX_ATTEMPTS
    caps = [BASE_DELAY * 2**attempt for attempt in range(MAX_ATTEMPTS - 1)]
    assert len(delays) == MAX_ATTEMPTS - 1
    assert all(0 <= delay <= cap for delay, cap in zip(delays, caps, strict=True))


def test_a_server_slower_than_the_read_timeout_is_retried(api_server, delays):
    read_timeout = 0.2
    slow_answer_sent = threading.Event()

    def too_slow(request):
        time.sleep(read_timeout * 2)
        slow_answer_sent.set()
        return Response("{}", content_type="application/json")

    def wait_for_the_server(delay: float) -> None:
        # The test server answers one request at a time: retry once it is free again.
        delays.append(delay)
        slow_answer_sent.wait(timeout=5)

    backend = KubernetesBackend.from_configuration(
        configuration=Configuration(host=api_server.url_for("/").rstrip("/")),
        request_timeout=(1.0, read_timeout),
        sleep=wait_for_the_server,
        rng=random.Random(1),
    )
    api_server.expect_ordered_request(NODES, method="GET").respond_with_handler(too_slow)
    api_server.expect_ordered_request(NODES, method="GET").respond_with_json(EMPTY_NODE_LIST)
    assert backend.list_nodes() == []
    assert len(delays) == 1


def test_a_refused_connection_is_retried_then_reported_as_retryable(delays):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    backend = KubernetesBackend.from_configuration(
        configuration=Configuration(host=f"http://127.0.0.1:{port}"),
        max_attempts=MAX_ATTEMPTS,
        sleep=delays.append,
        rng=random.Random(1),
    )
    with pytest.raises(ClusterError, match="failed 4 times") as raised:
        backend.list_nodes()
    assert (raised.value.status, raised.value.retryable) == (None, True)
    assert len(delays) == MAX_ATTEMPTS - 1
