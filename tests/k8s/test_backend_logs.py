"""A workload's logs through the pods' log API: its pods listed by label, one pod per replica,
lines asked with their timestamps and merged oldest first; followed as streams."""

import time
from datetime import UTC, datetime

import pytest
from kubernetes.client import Configuration
from pytest_httpserver import HTTPServer
from werkzeug import Response

from scheduling.cluster.kubernetes import KubernetesBackend
from scheduling.cluster.specs import LogLine

PODS = "/api/v1/namespaces/acme-research/pods"
LABEL = "gpu-cloud.io/workload"
INDEX = "batch.kubernetes.io/job-completion-index"


def _pod(name: str, *, index: int | None = None, created: str = "2026-12-01T10:00:00Z") -> dict:
    labels = {LABEL: "train-42"}
    if index is not None:
        labels[INDEX] = str(index)
    return {"metadata": {"name": name, "labels": labels, "creationTimestamp": created}}


def _listed(api_server, *pods: dict, workload: str = "train-42") -> None:
    api_server.expect_ordered_request(
        PODS, method="GET", query_string={"labelSelector": f"{LABEL}={workload}", "limit": "500"}
    ).respond_with_json({"kind": "PodList", "items": list(pods)})


def _log_of(api_server, pod: str, text: str, **query: str) -> None:
    api_server.expect_ordered_request(
        f"{PODS}/{pod}/log",
        method="GET",
        query_string={"container": "main", "timestamps": "true", **query},
    ).respond_with_data(text, content_type="text/plain")


def _two_pods_listed(api_server) -> None:
    _listed(api_server, _pod("train-42-0-aaaaa", index=0), _pod("train-42-1-bbbbb", index=1))


def _texts_of_train(backend, **options) -> list[str]:
    lines = backend.logs(namespace="acme-research", name="train-42", kind="Job", **options)
    return [line.text for line in lines]


def _at(second: int, micro: int = 0) -> datetime:
    return datetime(2026, 12, 1, 10, 0, second, micro, tzinfo=UTC)


def test_a_jobs_replicas_are_read_by_completion_index_and_merged_oldest_first(api_server, backend):
    _listed(api_server, _pod("train-42-1-bbbbb", index=1), _pod("train-42-0-aaaaa", index=0))
    _log_of(
        api_server,
        "train-42-0-aaaaa",
        "2026-12-01T10:00:01.000000001Z step 1\n2026-12-01T10:00:03Z step 2\n",
    )
    _log_of(api_server, "train-42-1-bbbbb", "2026-12-01T10:00:02.5Z rank 1 up\n")
    lines = list(backend.logs(namespace="acme-research", name="train-42", kind="Job"))
    assert lines == [
        LogLine(at=_at(1), replica=0, text="step 1"),
        LogLine(at=_at(2, 500000), replica=1, text="rank 1 up"),
        LogLine(at=_at(3), replica=0, text="step 2"),
    ]


def test_a_retried_index_is_read_from_its_newest_pod(api_server, backend):
    older = _pod("train-42-0-old", index=0, created="2026-12-01T09:00:00Z")
    _listed(api_server, _pod("train-42-0-new", index=0), older)
    _log_of(api_server, "train-42-0-new", "2026-12-01T10:00:01Z again\n")
    assert _texts_of_train(backend) == ["again"]


def test_one_replica_is_read_alone_with_tail_and_since_sent_to_the_api_server(api_server, backend):
    _two_pods_listed(api_server)
    _log_of(
        api_server,
        "train-42-1-bbbbb",
        "2026-12-01T10:00:02.100Z before since\n2026-12-01T10:00:02.600Z after since\n",
        tailLines="5",
        sinceTime="2026-12-01T10:00:02Z",
    )
    assert _texts_of_train(backend, replica=1, tail=5, since=_at(2, 500000)) == ["after since"]


def test_the_tail_is_the_last_lines_of_all_replicas_together(api_server, backend):
    _two_pods_listed(api_server)
    _log_of(
        api_server,
        "train-42-0-aaaaa",
        "2026-12-01T10:00:01Z a\n2026-12-01T10:00:04Z d\n",
        tailLines="2",
    )
    _log_of(
        api_server,
        "train-42-1-bbbbb",
        "2026-12-01T10:00:02Z b\n2026-12-01T10:00:03Z c\n",
        tailLines="2",
    )
    assert _texts_of_train(backend, tail=2) == ["c", "d"]


def test_a_deployments_replicas_are_its_pods_in_order_of_creation(api_server, backend):
    second = _pod("serve-42-abc-2", created="2026-12-01T10:05:00Z")
    _listed(api_server, second, _pod("serve-42-abc-1"), workload="serve-42")
    _log_of(api_server, "serve-42-abc-2", "2026-12-01T10:00:01Z second pod\n")
    lines = backend.logs(namespace="acme-research", name="serve-42", kind="Deployment", replica=1)
    assert [line.text for line in lines] == ["second pod"]


def test_a_container_not_started_yet_or_a_pod_gone_has_no_lines(api_server, backend):
    _two_pods_listed(api_server)
    waiting = 'container "main" in pod "train-42-0-aaaaa" is waiting to start: ContainerCreating'
    api_server.expect_ordered_request(f"{PODS}/train-42-0-aaaaa/log").respond_with_json(
        {"kind": "Status", "code": 400, "reason": "BadRequest", "message": waiting}, status=400
    )
    api_server.expect_ordered_request(f"{PODS}/train-42-1-bbbbb/log").respond_with_json(
        {"kind": "Status", "code": 404, "reason": "NotFound", "message": "gone"}, status=404
    )
    assert _texts_of_train(backend) == []


def test_a_workload_without_pods_has_no_lines(api_server, backend):
    _listed(api_server)
    assert _texts_of_train(backend) == []


def _stream(*chunks: tuple[float, str]):
    """A log answer written piece by piece, each after its pause (seconds)."""

    def handler(_request):
        def written():
            for pause, text in chunks:
                time.sleep(pause)
                yield text.encode()

        return Response(written(), content_type="text/plain")

    return handler


def _follow(api_server, handler, **query: str) -> None:
    api_server.expect_ordered_request(
        f"{PODS}/notebook-42/log",
        method="GET",
        query_string={"container": "main", "timestamps": "true", "follow": "true", **query},
    ).respond_with_handler(handler)


def test_following_yields_lines_as_the_container_writes_them_until_it_ends(api_server, backend):
    _listed(api_server, _pod("notebook-42"), workload="notebook-42")
    _follow(
        api_server,
        _stream((0, "2026-12-01T10:00:01Z one\n"), (0.3, "2026-12-01T10:00:02Z tw"), (0.1, "o\n")),
        tailLines="10",
    )
    lines = backend.logs(
        namespace="acme-research",
        name="notebook-42",
        kind="Pod",
        tail=10,
        keep_following=lambda: True,
    )
    assert [line.text for line in lines] == ["one", "two"]


def test_following_stops_when_told_though_the_stream_is_silent(api_server, backend):
    _listed(api_server, _pod("notebook-42"), workload="notebook-42")
    _follow(
        api_server, _stream((0, "2026-12-01T10:00:01Z one\n"), (2.5, "2026-12-01T10:00:09Z late\n"))
    )
    asked = []

    def keep_following() -> bool:  # the third time: after a second of silence
        asked.append(True)
        return len(asked) < 3

    lines = backend.logs(
        namespace="acme-research", name="notebook-42", kind="Pod", keep_following=keep_following
    )
    assert [line.text for line in lines] == ["one"]


@pytest.fixture
def own_server():
    """A server of its own, threaded: no other test's stream is still being written to it."""
    server = HTTPServer(threaded=True)
    server.no_handler_status_code = 418
    server.start()
    yield server
    server.check_assertions()
    server.stop()


def test_a_stream_the_read_timeout_breaks_is_opened_again_from_its_last_line(own_server):
    impatient = KubernetesBackend.from_configuration(
        configuration=Configuration(host=own_server.url_for("/").rstrip("/")),
        request_timeout=(1.0, 0.5),
        sleep=lambda _seconds: None,
    )
    _listed(own_server, _pod("notebook-42"), workload="notebook-42")
    _follow(own_server, _stream((0, "2026-12-01T10:00:01Z one\n"), (1.0, "")))
    _follow(
        own_server,
        _stream((0, "2026-12-01T10:00:01Z one\n2026-12-01T10:00:02Z two\n")),
        sinceTime="2026-12-01T10:00:01Z",
    )
    lines = impatient.logs(
        namespace="acme-research", name="notebook-42", kind="Pod", keep_following=lambda: True
    )
    assert [line.text for line in lines] == ["one", "two"]
    assert own_server.ordered_handlers == []
