"""Job files: YAML that mirrors the submit API's body (`name`, `kind`, `tier`, `image`,
`gpu_classes`, `gpus`, `replicas`, `command`, `env`, …), plus two keys of gpuctl's own:
`project` (where to submit) and `array` (a job array: a count, or a list of items, each a
value or a mapping of fields that replace the file's). Several YAML documents in one file are
submitted together, all or none."""

import sys
from pathlib import Path

import click
import yaml

from .errors import GpuctlError

ARRAY_INDEX = "GPUCTL_ARRAY_INDEX"
ARRAY_ITEM = "GPUCTL_ARRAY_ITEM"
OWN_KEYS = ("project", "array")


def load(path: str, overrides: tuple[str, ...]) -> tuple[str | None, list[dict]]:
    """The project a file names (or None) and the API bodies it holds, ``--set`` applied."""
    try:
        text = Path(path).read_text() if path != "-" else sys.stdin.read()
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except OSError as error:
        raise click.BadParameter(str(error), param_hint="-f") from error
    except yaml.YAMLError as error:
        raise GpuctlError(f"{path} is not valid YAML: {error}", exit_code=2) from error
    if not documents or not all(isinstance(d, dict) for d in documents):
        raise GpuctlError(f"{path}: each document must be a mapping of fields.", exit_code=2)
    projects = set()
    bodies = []
    for document in documents:
        for override in overrides:
            override_apply(document, override)
        projects.add(document.pop("project", None))
        bodies.extend(expand(document))
    if len(projects) > 1:
        raise GpuctlError(f"{path}: every document must name the same project.", exit_code=2)
    return projects.pop(), [_env_as_strings(body) for body in bodies]


def override_apply(document: dict, override: str) -> None:
    """``key=value`` or ``a.b=value``: the value read as YAML (``8``, ``true``, ``[a, b]``)."""
    key, sep, raw = override.partition("=")
    if not sep or not key:
        raise click.BadParameter(f"{override!r}: use KEY=VALUE, e.g. gpus=8", param_hint="--set")
    try:
        value = yaml.safe_load(raw) if raw else ""
    except yaml.YAMLError:
        value = raw
    *parents, last = key.split(".")
    target = document
    for part in parents:
        if not isinstance(target.setdefault(part, {}), dict):
            raise click.BadParameter(f"{key!r}: {part} is not a mapping", param_hint="--set")
        target = target[part]
    target[last] = value


def expand(document: dict) -> list[dict]:
    """One body, or a job array's: `name-0`, `name-1`, … each with GPUCTL_ARRAY_INDEX (and
    GPUCTL_ARRAY_ITEM for a value item) in its environment."""
    array = document.pop("array", None)
    if array is None:
        return [document]
    if isinstance(array, int) and not isinstance(array, bool) and array > 0:
        items = [None] * array
    elif isinstance(array, list) and array:
        items = array
    else:
        raise GpuctlError("array: a positive count or a non-empty list of items.", exit_code=2)
    name = document.get("name", "job")
    bodies = []
    for index, item in enumerate(items):
        body = {**document, **(item if isinstance(item, dict) else {}), "name": f"{name}-{index}"}
        env = {**document.get("env", {}), **body.get("env", {}), ARRAY_INDEX: str(index)}
        if item is not None and not isinstance(item, dict):
            env[ARRAY_ITEM] = str(item)
        bodies.append({**body, "env": env})
    return bodies


def _env_as_strings(body: dict) -> dict:
    """Environment values are strings to the API; YAML reads `EPOCHS: 3` as a number."""
    env = body.get("env")
    if isinstance(env, dict):
        body["env"] = {name: _text(value) for name, value in env.items()}
    return body


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)
