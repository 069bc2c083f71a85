"""The logs the simulated cluster's workloads write: real-looking progress from their manifest
and the portal's clock, the same lines for the same time, new lines as the time moves on."""

import re
from pathlib import Path

import pytest
from django.conf import settings

from portal import clock
from scheduling.backends import DatabaseSimulatorStore
from scheduling.cluster.manifests import workload_manifests, workload_primary_object
from scheduling.cluster.simulated import SimulatedBackend
from scheduling.cluster.specs import WorkloadKind

from ..k8s.examples import workload_spec

pytestmark = pytest.mark.django_db

STEP = re.compile(r"epoch (\d+)/\d+ step (\d+)/\d+ loss ([\d.]+) .* samples/s gpu_mem [\d.]+/80")


def _backend(*, sleep=lambda _seconds: None) -> SimulatedBackend:
    return SimulatedBackend(
        description_path=Path(settings.PORTAL_SIMULATED_CLUSTER),
        store=DatabaseSimulatorStore(),
        now=clock.now,
        sleep=sleep,
    )


def _launch(backend, kind=WorkloadKind.TRAINING, **overrides) -> str:
    spec = workload_spec(kind, **{"name": "run-1", "nodes": ("dgx-h100-01",), **overrides})
    for manifest in workload_manifests(spec):
        backend.apply(manifest)
    return workload_primary_object(kind=kind)[1]


def _lines(backend, kind="Job", **options) -> list:
    return list(backend.logs(namespace="acme-research", name="run-1", kind=kind, **options))


def _texts(lines) -> list[str]:
    return [line.text.split("] ", 1)[1] for line in lines]


def test_a_training_job_reports_its_progress_every_ten_seconds_with_loss_falling():
    backend = _backend()
    _launch(backend, env={"SIMULATED_RUNTIME_SECONDS": "600"})
    clock.advance(seconds=5 + 300)
    lines = _lines(backend)
    assert "NCCL initialised" in lines[0].text and "dataset loaded" in lines[1].text
    progress = [STEP.search(line.text) for line in lines[2:]]
    assert len(progress) == 30 and all(progress)
    losses = [float(match.group(3)) for match in progress]
    assert losses[-1] < losses[0] - 1
    assert [int(match.group(2)) for match in progress] == sorted(int(m.group(2)) for m in progress)


def test_a_workload_writes_nothing_before_its_containers_start():
    backend = _backend()
    _launch(backend)
    clock.advance(seconds=4)
    assert _lines(backend) == []


def test_a_workload_never_applied_has_no_logs():
    assert _lines(_backend()) == []


def test_the_same_time_gives_the_same_lines():
    backend = _backend()
    _launch(backend)
    clock.advance(seconds=125)
    assert _lines(backend) == _lines(backend)


def test_the_replicas_of_a_gang_are_merged_oldest_first():
    backend = _backend()
    _launch(backend, replicas=2, nodes=("dgx-h100-01", "dgx-h100-02"))
    clock.advance(seconds=5 + 20)
    lines = _lines(backend)
    assert [line.replica for line in lines] == [0, 0, 1, 1, 0, 1, 0, 1]
    assert [line.at for line in lines] == sorted(line.at for line in lines)


def test_one_replica_is_read_alone():
    backend = _backend()
    _launch(backend, replicas=2, nodes=("dgx-h100-01", "dgx-h100-02"))
    clock.advance(seconds=5 + 20)
    assert {line.replica for line in _lines(backend, replica=1)} == {1}


def test_the_tail_is_the_last_lines_and_since_the_lines_from_then():
    backend = _backend()
    _launch(backend)
    clock.advance(seconds=5 + 100)
    every = _lines(backend)
    assert _lines(backend, tail=3) == every[-3:]
    assert _lines(backend, since=every[5].at) == every[5:]


def test_a_job_that_succeeds_ends_with_its_summary_and_writes_nothing_more():
    backend = _backend()
    _launch(backend, env={"SIMULATED_RUNTIME_SECONDS": "60"})
    clock.advance(seconds=5 + 60)
    ended = _lines(backend)
    assert _texts(ended)[-1] == "training finished in 60s"
    clock.advance(seconds=600)
    assert _lines(backend) == ended


def test_a_job_that_fails_ends_with_a_traceback():
    backend = _backend()
    _launch(backend, env={"SIMULATED_RUNTIME_SECONDS": "60", "SIMULATED_EXIT": "fail"})
    clock.advance(seconds=5 + 60)
    texts = [line.text for line in _lines(backend)]
    assert "Traceback (most recent call last):" in texts
    assert texts[-1].startswith("torch.OutOfMemoryError: CUDA out of memory.")


def test_a_job_stopped_at_its_deadline_writes_no_summary():
    backend = _backend()
    _launch(backend, env={"SIMULATED_RUNTIME_SECONDS": "600"}, max_runtime_seconds=65)
    clock.advance(seconds=600)
    texts = _texts(_lines(backend))
    assert len(texts) == 2 + 5 and texts[-1].startswith("epoch ")


def test_an_inference_service_logs_the_requests_it_answers():
    backend = _backend()
    kind = _launch(backend, WorkloadKind.INFERENCE)
    clock.advance(seconds=5 + 30)
    texts = _texts(_lines(backend, kind=kind))
    assert texts[1].startswith("INFO: Uvicorn running on http://0.0.0.0:8000")
    assert all('"POST /v1/completions HTTP/1.1" 200 OK' in text for text in texts[2:])


def test_following_shows_new_lines_as_the_simulated_time_moves_until_the_job_ends():
    backend = _backend(sleep=lambda _seconds: clock.advance(seconds=20))
    _launch(backend, env={"SIMULATED_RUNTIME_SECONDS": "60"})
    clock.advance(seconds=5 + 10)
    followed = _lines(backend, keep_following=lambda: True)
    assert followed == _lines(backend)
    assert _texts(followed)[-1] == "training finished in 60s"


def test_following_a_service_stops_when_told():
    asked = []
    backend = _backend(sleep=lambda _seconds: clock.advance(seconds=10))
    kind = _launch(backend, WorkloadKind.INFERENCE)
    clock.advance(seconds=5)
    lines = _lines(backend, kind=kind, keep_following=lambda: len(asked.append(1) or asked) < 4)
    assert len(lines) == 2 + 3


def test_following_ends_when_the_objects_are_deleted():
    backend = _backend()
    kind = _launch(backend, WorkloadKind.INFERENCE)
    clock.advance(seconds=5)

    def deleted_then_slept(_seconds):
        backend.delete(api_version="apps/v1", kind=kind, name="run-1", namespace="acme-research")

    backend.sleep = deleted_then_slept
    assert len(_lines(backend, kind=kind, keep_following=lambda: True)) == 2
