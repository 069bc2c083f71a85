"""Apply and delete: the exact requests, create-first, and reconcile on AlreadyExists."""

import copy

import pytest

from scheduling.cluster.base import ClusterError
from scheduling.cluster.manifests import (
    priority_class_manifest,
    project_manifests,
    workload_manifests,
)

from .conftest import status_body
from .examples import PROJECTS, TIERS, WORKLOADS

JOBS = "/apis/batch/v1/namespaces/acme-research/jobs"
SERVICES = "/api/v1/namespaces/acme-research/services"


def _already_exists(kind: str, name: str) -> dict:
    return status_body(
        code=409, reason="AlreadyExists", message=f'{kind.lower()}s "{name}" already exists'
    )


def _live(manifest: dict, **metadata) -> dict:
    """The manifest as the API server keeps it: with uid, resourceVersion and a status."""
    live = copy.deepcopy(manifest)
    live["metadata"].update(uid="0b7c3c3e", resourceVersion="41", **metadata)
    live["status"] = {}
    return live


@pytest.fixture
def job() -> dict:
    return workload_manifests(WORKLOADS["single-node fine-tuning"])[0]


@pytest.fixture
def service() -> dict:
    return workload_manifests(WORKLOADS["inference service"])[1]


def test_a_new_workload_is_created_with_one_post_of_its_manifest(api_server, backend, job):
    api_server.expect_ordered_request(JOBS, method="POST", json=job).respond_with_json(
        _live(job), status=201
    )
    assert backend.apply(job)["metadata"]["uid"] == "0b7c3c3e"


@pytest.mark.parametrize(
    ("manifest", "path"),
    [
        (project_manifests(PROJECTS["whole GPUs"])[0], "/api/v1/namespaces"),
        (priority_class_manifest(TIERS[0]), "/apis/scheduling.k8s.io/v1/priorityclasses"),
        (
            project_manifests(PROJECTS["whole GPUs"])[6],
            "/apis/networking.k8s.io/v1/namespaces/acme-research/networkpolicies",
        ),
    ],
    ids=["core cluster-scoped", "group cluster-scoped", "group namespaced"],
)
def test_each_object_is_posted_to_its_collection(api_server, backend, manifest, path):
    api_server.expect_ordered_request(path, method="POST", json=manifest).respond_with_json(
        manifest, status=201
    )
    backend.apply(manifest)


def test_an_existing_object_that_differs_is_put_back_over_the_live_one(
    api_server, backend, service
):
    live = _live(service)
    live["metadata"]["labels"]["gpu-cloud.io/project"] = "renamed"
    live["spec"]["ports"][0]["port"] = 9000
    live["spec"]["clusterIP"] = "10.96.12.7"  # set by the server, immutable
    expected = copy.deepcopy(live)
    expected["metadata"]["labels"]["gpu-cloud.io/project"] = "research"
    expected["spec"]["ports"] = service["spec"]["ports"]
    path = f"{SERVICES}/inference-42"
    api_server.expect_ordered_request(SERVICES, method="POST").respond_with_json(
        _already_exists("Service", "inference-42"), status=409
    )
    api_server.expect_ordered_request(path, method="GET").respond_with_json(live)
    api_server.expect_ordered_request(path, method="PUT", json=expected).respond_with_json(
        {**expected, "metadata": {**expected["metadata"], "resourceVersion": "42"}}
    )
    assert backend.apply(service)["metadata"]["resourceVersion"] == "42"


def test_an_existing_object_that_already_matches_is_left_alone(api_server, backend, job):
    live = _live(job)
    # What the API server adds on its own is not a difference.
    live["spec"]["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": "0b7c"}}
    live["spec"]["podReplacementPolicy"] = "TerminatingOrFailed"
    live["spec"]["template"]["metadata"]["labels"]["job-name"] = "fine-tuning-42"
    live["spec"]["template"]["spec"]["containers"][0]["terminationMessagePath"] = "/dev/x"
    live["metadata"]["annotations"] = {"batch.kubernetes.io/job-tracking": ""}
    api_server.expect_ordered_request(JOBS, method="POST").respond_with_json(
        _already_exists("Job", "fine-tuning-42"), status=409
    )
    api_server.expect_ordered_request(f"{JOBS}/fine-tuning-42", method="GET").respond_with_json(
        live
    )
    assert backend.apply(job) == live


def test_quantities_the_server_wrote_in_canonical_form_are_not_differences(api_server, backend):
    limit_range = project_manifests(PROJECTS["whole GPUs"])[2]
    live = _live(limit_range)
    live["spec"]["limits"][0]["max"]["memory"] = "1Ti"  # "1024Gi" as the server keeps it
    path = "/api/v1/namespaces/acme-research/limitranges"
    api_server.expect_ordered_request(path, method="POST").respond_with_json(
        _already_exists("LimitRange", "container-limits"), status=409
    )
    api_server.expect_ordered_request(f"{path}/container-limits", method="GET").respond_with_json(
        live
    )
    backend.apply(limit_range)


def test_a_quota_entry_the_project_no_longer_has_is_removed(api_server, backend):
    quota = project_manifests(PROJECTS["whole GPUs"])[1]
    live = _live(quota)
    live["spec"]["hard"]["requests.nvidia.com/mig-1g.10gb"] = "14"
    expected = copy.deepcopy(live)
    expected["spec"]["hard"] = quota["spec"]["hard"]
    path = "/api/v1/namespaces/acme-research/resourcequotas"
    api_server.expect_ordered_request(path, method="POST").respond_with_json(
        _already_exists("ResourceQuota", "gpu-quota"), status=409
    )
    api_server.expect_ordered_request(f"{path}/gpu-quota", method="GET").respond_with_json(live)
    api_server.expect_ordered_request(
        f"{path}/gpu-quota", method="PUT", json=expected
    ).respond_with_json(expected)
    backend.apply(quota)


def test_a_job_whose_spec_differs_is_reported_since_kubernetes_cannot_change_it(
    api_server, backend, job
):
    live = _live(job)
    live["spec"]["template"]["spec"]["containers"][0]["image"] = "nvcr.io/nvidia/pytorch:24.01"
    api_server.expect_ordered_request(JOBS, method="POST").respond_with_json(
        _already_exists("Job", "fine-tuning-42"), status=409
    )
    api_server.expect_ordered_request(f"{JOBS}/fine-tuning-42", method="GET").respond_with_json(
        live
    )
    with pytest.raises(ClusterError, match="already exists with a different spec") as raised:
        backend.apply(job)
    assert (raised.value.status, raised.value.retryable) == (409, False)


def test_an_object_still_being_deleted_is_created_again_on_a_later_try(api_server, backend, job):
    api_server.expect_ordered_request(JOBS, method="POST").respond_with_json(
        _already_exists("Job", "fine-tuning-42"), status=409
    )
    api_server.expect_ordered_request(f"{JOBS}/fine-tuning-42", method="GET").respond_with_json(
        _live(job, deletionTimestamp="2026-11-30T01:00:00Z")
    )
    with pytest.raises(ClusterError, match="still being deleted") as raised:
        backend.apply(job)
    assert raised.value.retryable


def test_a_put_that_lost_a_race_reads_the_object_again(api_server, backend, service):
    stale = _live(service)
    stale["spec"]["ports"][0]["port"] = 9000
    path = f"{SERVICES}/inference-42"
    api_server.expect_ordered_request(SERVICES, method="POST").respond_with_json(
        _already_exists("Service", "inference-42"), status=409
    )
    api_server.expect_ordered_request(path, method="GET").respond_with_json(stale)
    api_server.expect_ordered_request(path, method="PUT").respond_with_json(
        status_body(code=409, reason="Conflict", message="the object has been modified"),
        status=409,
    )
    api_server.expect_ordered_request(path, method="GET").respond_with_json(_live(service))
    backend.apply(service)


def test_a_manifest_the_server_rejects_is_reported_with_its_message_and_not_retried(
    api_server, backend, job, delays
):
    message = 'Job.batch "fine-tuning-42" is invalid: spec.template.spec.priorityClassName'
    api_server.expect_ordered_request(JOBS, method="POST").respond_with_json(
        status_body(code=422, reason="Invalid", message=message), status=422
    )
    with pytest.raises(ClusterError, match=r"is invalid: spec\.template") as raised:
        backend.apply(job)
    assert (raised.value.status, raised.value.retryable) == (422, False)
    assert (len(api_server.log), delays) == (1, [])


def test_a_manifest_with_problems_never_leaves_the_portal(api_server, backend, job):
    job = copy.deepcopy(job)
    resources = job["spec"]["template"]["spec"]["containers"][0]["resources"]
    resources["requests"]["nvidia.com/gpu"] = "8"
    with pytest.raises(ClusterError, match="must be in limits only") as raised:
        backend.apply(job)
    assert raised.value.status == 422
    assert api_server.log == []


def test_delete_lets_the_garbage_collector_remove_dependents_in_the_background(api_server, backend):
    api_server.expect_ordered_request(
        f"{JOBS}/training-42",
        method="DELETE",
        json={"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"},
    ).respond_with_json({"kind": "Status", "status": "Success"})
    backend.delete(
        api_version="batch/v1", kind="Job", name="training-42", namespace="acme-research"
    )


def test_deleting_an_object_that_is_already_gone_succeeds(api_server, backend):
    api_server.expect_ordered_request(
        "/api/v1/namespaces/acme-old", method="DELETE"
    ).respond_with_json(
        status_body(code=404, reason="NotFound", message='namespaces "acme-old" not found'),
        status=404,
    )
    backend.delete(api_version="v1", kind="Namespace", name="acme-old", namespace=None)


def test_a_kind_the_portal_does_not_manage_is_refused_without_a_request(api_server, backend):
    with pytest.raises(ClusterError, match="does not manage CronJob"):
        backend.delete(api_version="batch/v1", kind="CronJob", name="x", namespace="acme")
    assert api_server.log == []
