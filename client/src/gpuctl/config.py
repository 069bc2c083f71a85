"""The user's configuration: contexts (a portal's URL, a token, a default organization and
project), the current one, in ``$XDG_CONFIG_HOME/gpuctl/config.yaml`` (``~/.config/gpuctl/``
without it), readable by its owner only (mode 0600). ``GPUCTL_URL`` and ``GPUCTL_TOKEN``
override the context's; ``GPUCTL_CONTEXT`` names the context to use."""

import os
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

from .errors import GpuctlError, NotLoggedIn


@dataclass
class Context:
    url: str
    token: str
    organization: str | None = None
    project: str | None = None


def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "gpuctl" / "config.yaml"


def load() -> dict:
    """``{"current": name or None, "contexts": {name: Context}}``."""
    path = config_path()
    if not path.exists():
        return {"current": None, "contexts": {}}
    try:
        raw = yaml.safe_load(path.read_text()) or {}
        contexts = {name: Context(**fields) for name, fields in raw.get("contexts", {}).items()}
    except (yaml.YAMLError, TypeError, AttributeError) as error:
        raise GpuctlError(f"{path} is not a gpuctl configuration: {error}") from error
    return {"current": raw.get("current"), "contexts": contexts}


def save(config: dict) -> Path:
    """Write the configuration, created with mode 0600 (and its folder 0700): it holds tokens."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    text = yaml.safe_dump(
        {
            "current": config["current"],
            "contexts": {name: asdict(c) for name, c in config["contexts"].items()},
        },
        sort_keys=False,
    )
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)  # a file made before with a wider mode is narrowed too
    with os.fdopen(descriptor, "w") as file:
        file.write(text)
    return path


def resolve(*, context: str | None = None, org: str | None = None, project: str | None = None):
    """The context to talk through: the one named (``--context``, ``GPUCTL_CONTEXT``) or the
    current one, with ``GPUCTL_URL`` / ``GPUCTL_TOKEN`` and then ``--org`` / ``--project`` over
    its fields."""
    config = load()
    name = context or os.environ.get("GPUCTL_CONTEXT") or config["current"]
    if name and name not in config["contexts"]:
        raise GpuctlError(f"No context {name!r}: gpuctl context ls lists them.", exit_code=2)
    chosen = config["contexts"].get(name) if name else None
    url = os.environ.get("GPUCTL_URL") or (chosen.url if chosen else None)
    token = os.environ.get("GPUCTL_TOKEN") or (chosen.token if chosen else None)
    if not url or not token:
        raise NotLoggedIn("Not logged in: gpuctl login URL (or set GPUCTL_URL and GPUCTL_TOKEN).")
    return Context(
        url=url,
        token=token,
        organization=org or (chosen.organization if chosen else None),
        project=project or (chosen.project if chosen else None),
    )
