"""How the portal compares and merges its objects with the live ones the API server returns:
what it owns of an object, whether the live one already holds it, and the live one with the
portal's values laid over it."""

import copy
from collections.abc import Mapping
from typing import Any

from kubernetes.utils import parse_quantity

# Fields whose values the API server rewrites in canonical form ("2048Mi" comes back "2Gi").
_QUANTITY_MAPS = frozenset({"requests", "limits", "hard", "default", "defaultRequest", "max"})
# Maps the portal writes whole: a quota entry it dropped must go, not linger from before.
_WHOLE_MAPS = frozenset({"hard"})
_NOT_OWNED = frozenset({"apiVersion", "kind", "metadata", "status"})


def contains(live: Any, desired: Any, *, quantities: bool = False, whole: bool = False) -> bool:
    """Whether the live value already holds everything the desired one says (the server adds
    defaults and fields of its own, which are not differences, except in a whole map)."""
    if isinstance(desired, Mapping):
        if not isinstance(live, Mapping) or (whole and live.keys() != desired.keys()):
            return False
        return all(
            key in live
            and contains(
                live[key],
                value,
                quantities=quantities or key in _QUANTITY_MAPS,
                whole=key in _WHOLE_MAPS,
            )
            for key, value in desired.items()
        )
    if isinstance(desired, list):
        return (
            isinstance(live, list)
            and len(live) == len(desired)
            and all(
                contains(a, b, quantities=quantities) for a, b in zip(live, desired, strict=True)
            )
        )
    if quantities and live != desired:
        try:
            return parse_quantity(live) == parse_quantity(desired)
        except (ValueError, TypeError):
            return False
    return live == desired


def owned(manifest: Mapping) -> dict:
    """What the portal owns of an object: its labels, annotations and everything but status."""
    metadata = manifest.get("metadata") or {}
    result = {key: value for key, value in manifest.items() if key not in _NOT_OWNED}
    kept = ("labels", "annotations")
    result["metadata"] = {key: metadata[key] for key in kept if key in metadata}
    return result


def merged(live: Any, desired: Any) -> Any:
    """The live object with the desired values laid over it; maps merge, lists are replaced,
    so fields the server set (a Service's clusterIP, a Namespace's finalizers) stay."""
    if isinstance(live, Mapping) and isinstance(desired, Mapping):
        result = dict(live)
        for key, value in desired.items():
            whole = key in _WHOLE_MAPS
            result[key] = copy.deepcopy(value) if whole else merged(live.get(key), value)
        return result
    return copy.deepcopy(desired)


def taint_id(taint: Mapping) -> str:
    return f"{taint['key']}:{taint['effect']}"


def annotation_set(annotations: Mapping, key: str) -> set[str]:
    return {item for item in annotations.get(key, "").split(",") if item}
