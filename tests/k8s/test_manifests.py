"""Every object the portal would send is valid by the Kubernetes schemas (strict, two minors)
and by the portal's own checks; and it says what the design asks of it."""

from dataclasses import replace

import kubernetes_validate
import pytest

from scheduling.cluster.checks import manifest_problems
from scheduling.cluster.manifests import (
    node_labels,
    owner_label_value,
    priority_class_manifest,
    project_manifests,
    workload_manifests,
    workload_primary_object,
)
from scheduling.cluster.specs import WorkloadKind

from .examples import NODES, PROJECTS, TIERS, WORKLOADS, workload_spec

KUBERNETES_VERSIONS = ["1.36.0", "1.37.0"]


def _all_manifests() -> list[tuple[str, dict]]:
    manifests = []
    for label, project in PROJECTS.items():
        manifests += [(f"project with {label}: {m['kind']}", m) for m in project_manifests(project)]
    manifests += [(f"tier {tier.name}", priority_class_manifest(tier)) for tier in TIERS]
    for label, workload in WORKLOADS.items():
        manifests += [(f"{label}: {m['kind']}", m) for m in workload_manifests(workload)]
    for node in NODES:
        labels, taints = node_labels(node)
        node_manifest = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": node.name, "labels": labels},
            "spec": {"taints": [vars(taint) for taint in taints]},
        }
        manifests.append((f"node {node.name}", node_manifest))
    return manifests


MANIFESTS = _all_manifests()


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize(("label", "manifest"), MANIFESTS, ids=[label for label, _ in MANIFESTS])
def test_every_manifest_validates_strictly_against_the_kubernetes_schema(label, manifest, version):
    kubernetes_validate.validate(manifest, version, strict=True)


@pytest.mark.parametrize(("label", "manifest"), MANIFESTS, ids=[label for label, _ in MANIFESTS])
def test_every_manifest_passes_the_portals_own_checks(label, manifest):
    assert manifest_problems(manifest) == []


def _by_kind(manifests: list[dict]) -> dict[str, dict]:
    return {manifest["kind"]: manifest for manifest in manifests}


def test_a_project_gets_namespace_quota_limits_account_role_binding_and_network_policy():
    kinds = [m["kind"] for m in project_manifests(PROJECTS["whole GPUs"])]
    assert kinds == [
        "Namespace",
        "ResourceQuota",
        "LimitRange",
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "NetworkPolicy",
    ]


def test_the_namespace_is_labeled_with_organization_project_and_managed_by_and_notes_its_owner():
    namespace = _by_kind(project_manifests(PROJECTS["whole GPUs"]))["Namespace"]
    assert namespace["metadata"]["labels"] == {
        "gpu-cloud.io/organization": "acme",
        "gpu-cloud.io/project": "research",
        "app.kubernetes.io/managed-by": "gpu-cloud-portal",
        "pod-security.kubernetes.io/enforce": "baseline",
    }
    assert namespace["metadata"]["annotations"] == {"gpu-cloud.io/owner": "alice@acme.example"}


def test_the_quota_limits_whole_gpus_every_mig_profile_and_pods_on_requests():
    quota = _by_kind(project_manifests(PROJECTS["MIG slices"]))["ResourceQuota"]
    assert quota["spec"]["hard"] == {
        "requests.nvidia.com/gpu": "2",
        "requests.nvidia.com/mig-1g.10gb": "14",
        "requests.nvidia.com/mig-3g.40gb": "4",
        "pods": "200",
    }


def test_a_project_without_a_gpu_quota_may_request_no_gpus():
    quota = _by_kind(project_manifests(PROJECTS["no GPUs"]))["ResourceQuota"]
    assert quota["spec"]["hard"] == {"requests.nvidia.com/gpu": "0", "pods": "200"}


def test_container_defaults_make_requests_equal_limits_and_never_include_gpus():
    limit_range = _by_kind(project_manifests(PROJECTS["whole GPUs"]))["LimitRange"]
    (limits,) = limit_range["spec"]["limits"]
    assert limits["default"] == limits["defaultRequest"] == {"cpu": "1", "memory": "2Gi"}
    assert limits["max"] == {"cpu": "128", "memory": "1024Gi"}


def test_the_tenant_service_account_may_only_read_its_namespace():
    manifests = _by_kind(project_manifests(PROJECTS["whole GPUs"]))
    verbs = {verb for rule in manifests["Role"]["rules"] for verb in rule["verbs"]}
    assert verbs == {"get", "list", "watch"}
    assert manifests["RoleBinding"]["subjects"] == [
        {"kind": "ServiceAccount", "name": "workloads", "namespace": "acme-research"}
    ]


def test_the_network_policy_admits_only_pods_of_the_same_namespace():
    policy = _by_kind(project_manifests(PROJECTS["whole GPUs"]))["NetworkPolicy"]["spec"]
    assert policy["podSelector"] == {}
    assert policy["ingress"] == [{"from": [{"podSelector": {}}]}]
    assert policy["egress"] == [{}]


def test_a_priority_class_carries_the_tiers_name_value_and_description():
    manifest = priority_class_manifest(TIERS[1])
    assert (manifest["metadata"]["name"], manifest["value"], manifest["description"]) == (
        "training",
        10_000,
        "Gangs and fine-tuning",
    )


def test_priority_classes_never_preempt_on_their_own():
    assert {priority_class_manifest(tier)["preemptionPolicy"] for tier in TIERS} == {"Never"}


def test_node_labels_name_gpu_type_purpose_pool_pool_labels_and_topology_with_the_pools_taint():
    labels, taints = node_labels(NODES[0])
    assert labels == {
        "gpu-type": "h100-80gb",
        "workload": "training",
        "gpu-cloud.io/pool": "dgx-h100",
        "gpu-cloud.io/fabric": "nvlink",
        "topology.kubernetes.io/zone": "eu-west-1a",
        "gpu-cloud.io/rack": "r12",
    }
    assert taints == (NODES[0].pool.taint,)


def test_a_pool_without_a_taint_gives_its_nodes_none():
    assert node_labels(NODES[1])[1] == ()


def test_a_gang_is_an_indexed_job_that_is_never_retried_with_a_headless_service_for_its_members():
    job, service = workload_manifests(WORKLOADS["training gang of 4"])
    assert (job["kind"], service["kind"]) == ("Job", "Service")
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"] == 4
    assert spec["backoffLimit"] == 0
    assert spec["activeDeadlineSeconds"] == 86_400
    assert spec["ttlSecondsAfterFinished"] > 0
    assert spec["template"]["spec"]["subdomain"] == service["metadata"]["name"] == "training-42"
    assert service["spec"]["clusterIP"] == "None"


def test_a_single_pod_job_may_be_retried_a_few_times_and_has_no_service():
    (job,) = workload_manifests(WORKLOADS["single-node fine-tuning"])
    assert 0 < job["spec"]["backoffLimit"] <= 3
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"


def test_a_job_without_a_max_runtime_has_no_deadline():
    (job,) = workload_manifests(WORKLOADS["batch inference on a MIG slice"])
    assert "activeDeadlineSeconds" not in job["spec"]


def test_an_inference_service_is_a_deployment_spread_one_replica_per_node_behind_a_service():
    deployment, service = workload_manifests(WORKLOADS["inference service"])
    assert deployment["spec"]["replicas"] == 2
    pod_spec = deployment["spec"]["template"]["spec"]
    assert pod_spec["restartPolicy"] == "Always"
    assert pod_spec["affinity"]["podAntiAffinity"] == {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"gpu-cloud.io/workload": "inference-42"}},
                "topologyKey": "kubernetes.io/hostname",
            }
        ]
    }
    assert service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["selector"] == {"gpu-cloud.io/workload": "inference-42"}
    assert service["spec"]["ports"][0]["port"] == 8000


def test_a_notebook_is_a_single_pod_that_restarts_only_on_failure():
    (pod,) = workload_manifests(WORKLOADS["notebook"])
    assert pod["kind"] == "Pod"
    assert pod["spec"]["restartPolicy"] == "OnFailure"


@pytest.mark.parametrize("kind", list(WorkloadKind))
def test_the_first_object_of_every_workload_is_the_one_that_carries_its_status(kind):
    first = workload_manifests(workload_spec(kind))[0]
    assert (first["apiVersion"], first["kind"]) == workload_primary_object(kind=kind)


def _pod(manifest: dict) -> tuple[dict, dict]:
    """Labels and spec of the pods a workload object makes."""
    if manifest["kind"] == "Pod":
        return manifest["metadata"]["labels"], manifest["spec"]
    template = manifest["spec"]["template"]
    return template["metadata"]["labels"], template["spec"]


def test_gpus_are_asked_for_in_limits_only_with_cpu_and_memory_requests_equal_to_limits():
    _, pod_spec = _pod(workload_manifests(WORKLOADS["training gang of 4"])[0])
    assert pod_spec["containers"][0]["resources"] == {
        "requests": {"cpu": "32", "memory": "256Gi"},
        "limits": {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8"},
    }


def test_a_mig_slice_is_asked_for_by_its_resource_name():
    _, pod_spec = _pod(workload_manifests(WORKLOADS["notebook"])[0])
    assert pod_spec["containers"][0]["resources"]["limits"]["nvidia.com/mig-1g.10gb"] == "1"


def test_pods_select_the_pool_tolerate_its_taint_and_require_the_engines_nodes():
    _, pod_spec = _pod(workload_manifests(WORKLOADS["training gang of 4"])[0])
    assert pod_spec["nodeSelector"] == {"gpu-cloud.io/pool": "dgx-h100"}
    assert pod_spec["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
    ]
    terms = pod_spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"] == [
        {
            "matchExpressions": [
                {
                    "key": "kubernetes.io/hostname",
                    "operator": "In",
                    "values": ["dgx-h100-001", "dgx-h100-002", "dgx-h100-003", "dgx-h100-004"],
                }
            ]
        }
    ]


def test_pods_without_chosen_nodes_have_no_node_affinity():
    _, pod_spec = _pod(workload_manifests(WORKLOADS["notebook"])[0])
    assert "affinity" not in pod_spec


def test_cpu_only_work_neither_selects_nor_tolerates_gpu_nodes():
    _, pod_spec = _pod(workload_manifests(WORKLOADS["CPU-only batch job"])[0])
    assert "nodeSelector" not in pod_spec
    assert "tolerations" not in pod_spec
    assert pod_spec["containers"][0]["resources"]["limits"] == {"cpu": "32", "memory": "256Gi"}


def test_pods_run_with_the_tier_priority_and_the_workloads_account_without_its_token():
    _, pod_spec = _pod(workload_manifests(WORKLOADS["inference service"])[0])
    assert pod_spec["priorityClassName"] == "inference-prod"
    assert pod_spec["serviceAccountName"] == "workloads"
    assert pod_spec["automountServiceAccountToken"] is False


def test_pods_are_labeled_with_organization_project_workload_owner_and_expiry():
    labels, _ = _pod(workload_manifests(WORKLOADS["training gang of 4"])[0])
    assert labels == {
        "gpu-cloud.io/organization": "acme",
        "gpu-cloud.io/project": "research",
        "app.kubernetes.io/managed-by": "gpu-cloud-portal",
        "gpu-cloud.io/workload": "training-42",
        "gpu-cloud.io/workload-id": "8f14e45f-ceea-467f-a0e6-6f3c1a2b9d10",
        "gpu-cloud.io/owner": "alice.o-hara-gpu_at_acme.example",
        "gpu-cloud.io/expires-at": "1796126400",
    }


def test_a_workload_without_expiry_has_no_expiry_label():
    labels, _ = _pod(workload_manifests(WORKLOADS["inference service"])[0])
    assert "gpu-cloud.io/expires-at" not in labels


def test_a_long_owner_address_is_cut_to_a_valid_label_value():
    value = owner_label_value(owner=f"{'a' * 62}-@example.com")
    assert value == "a" * 62


def _pod_specs(spec) -> list[dict]:
    primary = workload_manifests(spec)[0]
    template = primary["spec"].get("template")
    return [template["spec"] if template else primary["spec"]]


@pytest.mark.parametrize("kind", list(WorkloadKind))
def test_the_pods_get_their_tiers_notice_as_their_termination_grace_period(kind):
    spec = WORKLOADS["training with a two-minute notice"]
    pods = _pod_specs(replace(spec, kind=kind))
    assert [pod["terminationGracePeriodSeconds"] for pod in pods] == [120]


def test_without_a_tier_notice_the_pods_keep_kubernetes_default_grace_period():
    assert "terminationGracePeriodSeconds" not in _pod_specs(WORKLOADS["training gang of 4"])[0]
