"""Rendered deployment manifests, and the scheduling fixtures the lock and backup tests use."""

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.scheduling.conftest import backend, cluster, quotas  # noqa: F401  (fixtures)

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
OVERLAYS = ("dev", "production")
KUBECTL = shutil.which("kubectl")


def render(overlay: str) -> list[dict]:
    """The objects `kubectl kustomize` renders for an overlay."""
    if KUBECTL is None:
        pytest.skip("kubectl (with its built-in kustomize) is not on PATH: cannot render")
    rendered = subprocess.run(
        [KUBECTL, "kustomize", str(DEPLOY / "kubernetes" / "overlays" / overlay)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return [document for document in yaml.safe_load_all(rendered.stdout) if document]


@pytest.fixture(scope="session")
def rendered() -> dict[str, list[dict]]:
    return {overlay: render(overlay) for overlay in OVERLAYS}


def objects_of(documents: list[dict], kind: str) -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in documents if d["kind"] == kind}
