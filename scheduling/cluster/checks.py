"""The portal's own rules for what it sends to a cluster, beyond the Kubernetes schemas.

The schemas accept a GPU in requests, half a GPU or a quota on `nvidia.com/gpu` that nothing
enforces; these checks do not. Both backends refuse a manifest with problems.
"""

import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation

from kubernetes.utils import parse_quantity

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
TAINT_EFFECTS = frozenset({"NoSchedule", "PreferNoSchedule", "NoExecute"})
# Names that become labels or hostnames (a Job's name is copied into its pods' `job-name`
# label) are limited to 63 characters; a Service's name is also a DNS label and must start
# with a letter; everything else is a DNS subdomain of up to 253.
_LABEL_NAMED_KINDS = frozenset({"Namespace", "Job"})
_POD_TEMPLATE_KINDS = frozenset({"Job", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"})
_NATIVE_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
_EQUAL_REQUESTS_AND_LIMITS = ("cpu", "memory")
# Priority values above this are reserved for system-node-critical and friends.
MAX_USER_PRIORITY = 1_000_000_000


def is_extended_resource(name: str) -> bool:
    """Extended resources (GPUs, MIG slices) are domain-qualified outside kubernetes.io."""
    if name in _NATIVE_RESOURCES or name.startswith("hugepages-") or "/" not in name:
        return False
    domain = name.split("/", 1)[0]
    return domain != "kubernetes.io" and not domain.endswith(".kubernetes.io")


def _name_problems(*, what: str, name: object, kind: str) -> list[str]:
    if not isinstance(name, str) or not name:
        return [f"{what} is missing"]
    if kind == "Service":
        pattern, limit, rule = _DNS1035_LABEL, 63, "an RFC 1035 label"
    elif kind in _LABEL_NAMED_KINDS:
        pattern, limit, rule = _DNS1123_LABEL, 63, "a DNS-1123 label"
    else:
        pattern, limit, rule = _DNS1123_SUBDOMAIN, 253, "a DNS-1123 subdomain"
    if len(name) > limit or not pattern.fullmatch(name):
        return [f"{what} {name!r} is not {rule} of at most {limit} characters"]
    return []


def _label_key_problems(*, where: str, key: object) -> list[str]:
    if not isinstance(key, str):
        return [f"{where}: key {key!r} is not a string"]
    prefix, _, name = key.rpartition("/")
    valid_prefix = not prefix or (len(prefix) <= 253 and _DNS1123_SUBDOMAIN.fullmatch(prefix))
    if not valid_prefix or len(name) > 63 or not _LABEL_NAME.fullmatch(name):
        return [f"{where}: key {key!r} is not a valid qualified name"]
    return []


def _label_problems(*, where: str, labels: object) -> list[str]:
    if not isinstance(labels, Mapping):
        return [f"{where} is not a mapping"]
    problems = []
    for key, value in labels.items():
        problems += _label_key_problems(where=where, key=key)
        valid_value = isinstance(value, str) and (
            value == "" or (len(value) <= 63 and _LABEL_NAME.fullmatch(value))
        )
        if not valid_value:
            problems.append(f"{where}: value {value!r} of {key!r} is not a valid label value")
    return problems


def _quantity(value: object) -> Decimal | None:
    try:
        return parse_quantity(value)
    except (ValueError, TypeError, InvalidOperation):
        return None


def _whole_count_problems(*, where: str, resource: str, value: object) -> list[str]:
    amount = _quantity(value)
    if amount is None or amount < 0 or amount != amount.to_integral_value():
        return [f"{where}: {resource} must be a whole number, not {value!r}"]
    return []


def _container_problems(*, where: str, container: Mapping) -> list[str]:
    resources = container.get("resources") or {}
    requests = resources.get("requests") or {}
    limits = resources.get("limits") or {}
    problems = []
    for resource in requests:
        if is_extended_resource(resource):
            problems.append(f"{where}: {resource} must be in limits only, not in requests")
    for resource, value in limits.items():
        if is_extended_resource(resource):
            problems += _whole_count_problems(where=where, resource=resource, value=value)
    # Requests equal to limits: the pod is Guaranteed and never squeezed by a noisy neighbour.
    for resource in _EQUAL_REQUESTS_AND_LIMITS:
        request, limit = requests.get(resource), limits.get(resource)
        if request is None and limit is None:
            continue
        if request is None or limit is None or _quantity(request) != _quantity(limit):
            problems.append(
                f"{where}: {resource} request {request!r} must equal its limit {limit!r}"
            )
    return problems


def _taint_problems(*, where: str, taints: object, tolerations: bool) -> list[str]:
    problems = []
    for index, taint in enumerate(taints or []):
        effect = taint.get("effect")
        # A toleration without an effect tolerates every effect of its key.
        if tolerations and not effect:
            continue
        if effect not in TAINT_EFFECTS:
            problems.append(
                f"{where}[{index}]: effect {effect!r} is not one of {sorted(TAINT_EFFECTS)}"
            )
    return problems


def _pod_spec_problems(*, where: str, pod_spec: Mapping) -> list[str]:
    problems = []
    for group in ("initContainers", "containers"):
        for container in pod_spec.get(group) or []:
            container_where = f"{where}.{group}[{container.get('name', '?')}]"
            problems += _container_problems(where=container_where, container=container)
    problems += _taint_problems(
        where=f"{where}.tolerations", taints=pod_spec.get("tolerations"), tolerations=True
    )
    if "nodeSelector" in pod_spec:
        problems += _label_problems(where=f"{where}.nodeSelector", labels=pod_spec["nodeSelector"])
    return problems


def _quota_problems(*, hard: Mapping) -> list[str]:
    problems = []
    for key, value in hard.items():
        resource = key.removeprefix("requests.").removeprefix("limits.")
        if not is_extended_resource(resource):
            continue
        # Kubernetes only enforces a quota on an extended resource named `requests.<resource>`;
        # any other spelling is accepted and silently ignored.
        if not key.startswith("requests."):
            problems.append(f"spec.hard: {key!r} must be written 'requests.{resource}'")
        problems += _whole_count_problems(where="spec.hard", resource=key, value=value)
    return problems


def manifest_problems(manifest: dict) -> list[str]:
    """Everything wrong with a manifest by the portal's rules; empty when it may be sent."""
    kind = manifest.get("kind", "")
    metadata = manifest.get("metadata") or {}
    problems = _name_problems(what="metadata.name", name=metadata.get("name"), kind=kind)
    if "namespace" in metadata:
        problems += _name_problems(
            what="metadata.namespace", name=metadata["namespace"], kind="Namespace"
        )
    problems += _label_problems(where="metadata.labels", labels=metadata.get("labels") or {})
    for key in metadata.get("annotations") or {}:
        problems += _label_key_problems(where="metadata.annotations", key=key)
    spec = manifest.get("spec") or {}
    if kind == "Pod":
        problems += _pod_spec_problems(where="spec", pod_spec=spec)
    elif kind in _POD_TEMPLATE_KINDS:
        template = spec.get("template") or {}
        problems += _label_problems(
            where="spec.template.metadata.labels",
            labels=(template.get("metadata") or {}).get("labels") or {},
        )
        problems += _pod_spec_problems(
            where="spec.template.spec", pod_spec=template.get("spec") or {}
        )
    if kind in ("Service", "Deployment"):
        selector = spec.get("selector") or {}
        selector_labels = selector.get("matchLabels", {}) if kind == "Deployment" else selector
        problems += _label_problems(where="spec.selector", labels=selector_labels)
    if kind == "ResourceQuota":
        problems += _quota_problems(hard=spec.get("hard") or {})
    if kind == "PriorityClass":
        value = manifest.get("value")
        if not isinstance(value, int) or value > MAX_USER_PRIORITY:
            problems.append(f"value {value!r} must be a whole number up to {MAX_USER_PRIORITY}")
    if kind == "Node":
        problems += _taint_problems(
            where="spec.taints", taints=spec.get("taints"), tolerations=False
        )
    return problems
