"""gpuctl against a live test server: the demo's data (`make demo`'s seed), a real API token,
the client run in this process (Click's runner) talking real HTTP to pytest-django's
`live_server`, its configuration in a temporary XDG folder. The scheduling cycle and the
simulated clock are driven here, as the worker's beat tasks would."""

import io
import json
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from django.conf import settings
from gpuctl.cli import cli


def job_file(name: str, **fields) -> str:
    """A job file's YAML: an 8-GPU H100 training job named ``name``; ``fields`` add keys or
    replace them."""
    job = {
        "name": name,
        "kind": "training",
        "tier": "training",
        "image": "nvcr.io/nvidia/pytorch:25.01-py3",
        "gpu_classes": ["H100-80GB"],
        "gpus": 8,
    }
    return yaml.safe_dump({**job, **fields}, sort_keys=False)


@pytest.fixture
def demo(transactional_db, request):
    """`make demo`'s data: the simulated cluster, acme (alice the owner, bob a member) with
    projects ai-dev and ai-prod and their quotas, the catalog, a drafted invoice, an operator;
    the projects' namespaces made, as the worker makes them. The other organizations' recorded
    days only for a test marked ``demo_history``: simulating them is most of the seed's time."""
    from django.core.management import call_command

    from scheduling import services
    from tenants.models import Project

    without_history = request.node.get_closest_marker("demo_history") is None
    call_command("seed_demo", without_history=without_history, stdout=io.StringIO())
    for project in Project.objects.all():
        services.project_provision(project_id=project.pk, backend=backend())


def backend():
    from scheduling.backends import simulated_backend

    return simulated_backend(description_path=Path(settings.PORTAL_SIMULATED_CLUSTER))


@pytest.fixture
def secret(demo):
    """A write token of alice, owner of acme."""
    from django.contrib.auth import get_user_model

    from tenants.models import Organization
    from tenants.permissions import Caller
    from tenants.services import token_issue

    _, issued = token_issue(
        caller=Caller(user=get_user_model().objects.get(email="alice@acme.example")),
        organization=Organization.objects.get(slug="acme"),
        name="gpuctl",
        scope="write",
    )
    return issued


@pytest.fixture
def config_home(tmp_path):
    return tmp_path / "config"


@pytest.fixture
def gpuctl(config_home, monkeypatch):
    """Run gpuctl with these arguments; its result (exit_code, stdout, stderr)."""
    for name in ("GPUCTL_URL", "GPUCTL_TOKEN", "GPUCTL_CONTEXT"):
        monkeypatch.delenv(name, raising=False)
    runner = CliRunner()

    def run(*args: str, input: str | None = None, env: dict | None = None):
        return runner.invoke(
            cli,
            list(args),
            input=input,
            env={"XDG_CONFIG_HOME": str(config_home), **(env or {})},
            prog_name="gpuctl",
        )

    return run


@pytest.fixture
def ok(gpuctl):
    """Run gpuctl and insist that it exits 0; its standard output."""

    def run(*args: str) -> str:
        result = gpuctl(*args)
        assert result.exit_code == 0, result.output
        return result.stdout

    return run


@pytest.fixture
def logged_in(gpuctl, live_server, secret):
    """gpuctl logged in as alice to acme, project ai-dev; the live server's URL."""
    result = gpuctl("login", live_server.url, "--token", secret, "--project", "ai-dev")
    assert result.exit_code == 0, result.output
    return live_server.url


@pytest.fixture
def operator_secret(demo):
    from django.contrib.auth import get_user_model

    from tenants.permissions import Caller
    from tenants.services import operator_token_issue

    ops = get_user_model().objects.get(email="ops@example.com")
    return operator_token_issue(caller=Caller(user=ops), name="gpuctl")[1]


@pytest.fixture
def as_operator(gpuctl, live_server, operator_secret):
    """gpuctl logged in with the operator token, in a context of its own."""
    result = gpuctl("login", live_server.url, "--token", operator_secret, "--context", "ops")
    assert result.exit_code == 0, result.output

    def run(*args: str):
        return gpuctl(*args, "--context", "ops")

    return run


def cycle() -> None:
    """One scheduling cycle, then what its tasks do: stop the preempted, launch the admitted."""
    from scheduling import services

    cluster = backend()
    result = services.scheduling_cycle_run()
    for workload_id in result.preempted:
        services.workload_objects_delete(workload_id=workload_id, backend=cluster)
    for workload_id in result.admitted:
        services.workload_launch(workload_id=workload_id, backend=cluster)


def advance(seconds: float) -> None:
    """Move the simulated clock on and follow the workloads, as beat's tasks do."""
    from portal import clock
    from scheduling import services

    clock.advance(seconds=seconds)
    services.workloads_sync(backend=backend())


def as_json(result) -> object:
    """A gpuctl result's JSON output, insisting that it exited 0."""
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def tomorrow_at(hour: int) -> str:
    from portal import clock

    day = clock.now() + timedelta(days=1)
    return day.replace(hour=hour, minute=0, second=0, microsecond=0).isoformat()


def ordered(gpuctl, *extra: str, item: str = "l4-reserved", hours=(9, 10)):
    """gpuctl orders create of ``item`` tomorrow from and to those hours (UTC)."""
    start, end = (tomorrow_at(hour) for hour in hours)
    window = ["--start", start, "--end", end]
    return gpuctl("orders", "create", "--item", item, "--quantity", "1", *window, *extra)
