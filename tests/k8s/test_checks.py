"""The portal's own checks catch each kind of mistake the Kubernetes schemas let through."""

import copy

import pytest

from scheduling.cluster.checks import manifest_problems
from scheduling.cluster.manifests import project_manifests, workload_manifests

from .examples import PROJECTS, WORKLOADS


@pytest.fixture
def job() -> dict:
    return copy.deepcopy(workload_manifests(WORKLOADS["single-node fine-tuning"])[0])


@pytest.fixture
def resources(job) -> dict:
    return job["spec"]["template"]["spec"]["containers"][0]["resources"]


@pytest.fixture
def quota() -> dict:
    manifests = project_manifests(PROJECTS["MIG slices"])
    return copy.deepcopy(next(m for m in manifests if m["kind"] == "ResourceQuota"))


def _node(*, effect: str) -> dict:
    taint = {"key": "nvidia.com/gpu", "value": "present", "effect": effect}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1"},
        "spec": {"taints": [taint]},
    }


def test_a_gpu_in_requests_is_a_problem(job, resources):
    resources["requests"]["nvidia.com/gpu"] = "8"
    assert manifest_problems(job) == [
        "spec.template.spec.containers[main]: "
        "nvidia.com/gpu must be in limits only, not in requests"
    ]


def test_a_fractional_gpu_is_a_problem(job, resources):
    resources["limits"]["nvidia.com/gpu"] = "0.5"
    assert manifest_problems(job) == [
        "spec.template.spec.containers[main]: nvidia.com/gpu must be a whole number, not '0.5'"
    ]


def test_a_gpu_in_millis_is_a_problem(job, resources):
    resources["limits"]["nvidia.com/mig-1g.10gb"] = "500m"
    assert len(manifest_problems(job)) == 1


def test_a_cpu_request_below_its_limit_is_a_problem(job, resources):
    resources["requests"]["cpu"] = "16"
    assert manifest_problems(job) == [
        "spec.template.spec.containers[main]: cpu request '16' must equal its limit '32'"
    ]


def test_a_memory_limit_without_a_request_is_a_problem(job, resources):
    del resources["requests"]["memory"]
    assert len(manifest_problems(job)) == 1


def test_equal_quantities_written_differently_are_equal(job, resources):
    resources["requests"]["cpu"] = "32000m"
    resources["requests"]["memory"] = "262144Mi"
    assert manifest_problems(job) == []


def test_an_extended_resource_quota_without_the_requests_prefix_is_a_problem(quota):
    quota["spec"]["hard"]["nvidia.com/mig-7g.80gb"] = "1"
    quota["spec"]["hard"]["limits.nvidia.com/gpu"] = "2"
    assert manifest_problems(quota) == [
        "spec.hard: 'nvidia.com/mig-7g.80gb' must be written 'requests.nvidia.com/mig-7g.80gb'",
        "spec.hard: 'limits.nvidia.com/gpu' must be written 'requests.nvidia.com/gpu'",
    ]


def test_native_resource_quotas_may_use_limits(quota):
    quota["spec"]["hard"]["limits.memory"] = "1Ti"
    assert manifest_problems(quota) == []


@pytest.mark.parametrize("effect", ["NoSchedule", "PreferNoSchedule", "NoExecute"])
def test_the_three_taint_effects_are_valid(effect):
    assert manifest_problems(_node(effect=effect)) == []


def test_an_unknown_taint_effect_is_a_problem():
    assert manifest_problems(_node(effect="NoScheduling")) == [
        "spec.taints[0]: effect 'NoScheduling' is not one of "
        "['NoExecute', 'NoSchedule', 'PreferNoSchedule']"
    ]


def test_a_toleration_with_an_unknown_effect_is_a_problem(job):
    job["spec"]["template"]["spec"]["tolerations"][0]["effect"] = "Never"
    assert len(manifest_problems(job)) == 1


def test_a_toleration_without_an_effect_tolerates_all_effects(job):
    del job["spec"]["template"]["spec"]["tolerations"][0]["effect"]
    assert manifest_problems(job) == []


@pytest.mark.parametrize(
    "name", ["Training-42", "training_42", "-training", "training-", "training-42\n", "a" * 64]
)
def test_a_job_name_that_is_not_a_dns_label_is_a_problem(job, name):
    job["metadata"]["name"] = name
    assert manifest_problems(job) == [
        f"metadata.name {name!r} is not a DNS-1123 label of at most 63 characters"
    ]


def test_a_namespace_name_longer_than_63_characters_is_a_problem(job):
    job["metadata"]["namespace"] = "n" * 64
    assert len(manifest_problems(job)) == 1


def test_a_service_name_must_start_with_a_letter():
    service = copy.deepcopy(workload_manifests(WORKLOADS["inference service"])[1])
    service["metadata"]["name"] = "42-inference"
    assert manifest_problems(service) == [
        "metadata.name '42-inference' is not an RFC 1035 label of at most 63 characters"
    ]


def test_most_objects_may_have_dotted_names_up_to_253_characters():
    priority_class = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "tier.gpu-cloud.io"},
        "value": 1,
    }
    assert manifest_problems(priority_class) == []


def test_a_missing_name_is_a_problem():
    assert manifest_problems({"apiVersion": "v1", "kind": "Pod", "metadata": {}}) == [
        "metadata.name is missing"
    ]


def test_an_invalid_label_value_is_a_problem(job):
    job["metadata"]["labels"]["gpu-cloud.io/owner"] = "alice@acme.example"
    assert manifest_problems(job) == [
        "metadata.labels: value 'alice@acme.example' of 'gpu-cloud.io/owner' "
        "is not a valid label value"
    ]


def test_an_invalid_label_key_is_a_problem(job):
    job["spec"]["template"]["metadata"]["labels"]["GPU Cloud/owner"] = "alice"
    assert manifest_problems(job) == [
        "spec.template.metadata.labels: key 'GPU Cloud/owner' is not a valid qualified name"
    ]


def test_a_label_value_longer_than_63_characters_is_a_problem(job):
    job["metadata"]["labels"]["gpu-cloud.io/project"] = "p" * 64
    assert len(manifest_problems(job)) == 1


def test_an_invalid_annotation_key_is_a_problem():
    namespace = copy.deepcopy(project_manifests(PROJECTS["whole GPUs"])[0])
    namespace["metadata"]["annotations"]["owner e-mail"] = "alice@acme.example"
    assert len(manifest_problems(namespace)) == 1


def test_a_priority_above_the_range_reserved_for_users_is_a_problem():
    priority_class = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "above-the-system"},
        "value": 2_000_000_001,
    }
    assert manifest_problems(priority_class) == [
        "value 2000000001 must be a whole number up to 1000000000"
    ]
