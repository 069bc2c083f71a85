"""Which nodes a request may use at all, before counting free capacity."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .model import (
    NodeSelectorRequirement,
    NodeState,
    PreferredAffinity,
    Request,
    SelectorOperator,
    Taint,
    TaintEffect,
    Toleration,
    TolerationOperator,
)

BLOCKING_EFFECTS = frozenset({TaintEffect.NO_SCHEDULE, TaintEffect.NO_EXECUTE})


def tolerates(*, toleration: Toleration, taint: Taint) -> bool:
    if toleration.effect is not None and toleration.effect != taint.effect:
        return False
    if toleration.operator == TolerationOperator.EXISTS:
        return toleration.key in ("", taint.key)
    return toleration.key == taint.key and toleration.value == taint.value


def untolerated_taints(
    *, taints: Sequence[Taint], tolerations: Sequence[Toleration]
) -> list[Taint]:
    return [t for t in taints if not any(tolerates(toleration=o, taint=t) for o in tolerations)]


def requirement_matches(*, requirement: NodeSelectorRequirement, labels: Mapping[str, str]) -> bool:
    value = labels.get(requirement.key)
    match requirement.operator:
        case SelectorOperator.IN:
            return value is not None and value in requirement.values
        case SelectorOperator.NOT_IN:
            return value is None or value not in requirement.values
        case SelectorOperator.EXISTS:
            return value is not None
        case SelectorOperator.DOES_NOT_EXIST:
            return value is None
        case SelectorOperator.GT | SelectorOperator.LT:
            # Kubernetes compares Gt/Lt as integers; a non-integer label never matches.
            try:
                have, bound = int(value or ""), int(requirement.values[0])
            except (ValueError, IndexError):
                return False
            return have > bound if requirement.operator == SelectorOperator.GT else have < bound
    return False


def describe_requirement(requirement: NodeSelectorRequirement) -> str:
    values = ",".join(requirement.values)
    return f"{requirement.key} {requirement.operator.value} {values}".rstrip()


def ineligibility(*, node: NodeState, request: Request, gpu_class: str) -> str | None:
    """Why ``node`` can never host ``request`` on ``gpu_class``, or None if it may."""
    if node.cordoned:
        return "cordoned"
    if request.pools and node.pool not in request.pools:
        return f"pool {node.pool} not requested"
    if request.region and node.region != request.region:
        return f"region {node.region} not requested"
    if request.needs_gpu and node.gpu_class != gpu_class:
        return f"GPU class {node.gpu_class}"
    labels = node_labels(node)
    for requirement in request.required_affinity:
        if not requirement_matches(requirement=requirement, labels=labels):
            return f"affinity {describe_requirement(requirement)} not met"
    blocking = [t for t in node.taints if t.effect in BLOCKING_EFFECTS]
    missing = untolerated_taints(taints=blocking, tolerations=request.tolerations)
    if missing:
        taint = missing[0]
        return f"taint {taint.key}={taint.value}:{taint.effect.value} not tolerated"
    return None


def node_labels(node: NodeState) -> Mapping[str, str]:
    """Node labels plus the pool, class and topology, so affinity can name any of them."""
    return {
        "pool": node.pool,
        "gpu-class": node.gpu_class,
        "cluster": node.cluster,
        "region": node.region,
        **node.topology,
        "kubernetes.io/hostname": node.name,
        **node.labels,
    }


def preference_score(*, node: NodeState, request: Request) -> int:
    """Preferred affinity weights met, minus a penalty per PreferNoSchedule taint not tolerated."""
    labels = node_labels(node)
    score = sum(
        term.weight
        for term in request.preferred_affinity
        if _term_matches(term=term, labels=labels)
    )
    soft = [t for t in node.taints if t.effect == TaintEffect.PREFER_NO_SCHEDULE]
    return score - 100 * len(untolerated_taints(taints=soft, tolerations=request.tolerations))


def _term_matches(*, term: PreferredAffinity, labels: Mapping[str, str]) -> bool:
    return all(requirement_matches(requirement=r, labels=labels) for r in term.requirements)
