"""Which code may import which (DESIGN, "Layout"), checked on every import of every module.

Lazy imports inside functions and relative imports count like any other. The rules:
- the engine (scheduling/engine) and the cluster backends (scheduling/cluster) stand alone: they
  import no Django, DRF, Celery or kombu, nothing of the apps (the rest of scheduling included)
  and nothing of the kernel; the engine gets snapshots and `now`, the backends get their
  configuration, clock, metrics client and storage passed in;
- tenants imports neither scheduling nor billing; scheduling imports no billing; none of the
  three imports webhooks (which reads them all to render what it delivers);
- the kernel (portal/, but for its composition root: settings, urls, the demo's commands)
  imports no app;
- no two apps import each other.
And nothing reads the time but the kernel's clock (portal/clock.py): the engine gets it as
`now`, everything else asks the clock.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
APPS = ("tenants", "scheduling", "billing", "webhooks")
# Packages that stand alone (named in a broken rule by their last part: "engine", "cluster").
STANDALONE = ("scheduling.engine", "scheduling.cluster")
FRAMEWORKS = ("django", "rest_framework", "celery", "kombu")
# portal's modules that put the apps together, and may therefore import them.
COMPOSITION_ROOT = ("portal.settings", "portal.urls", "portal.management")
# An app may not import these apps.
FORBIDDEN_APPS = {
    "tenants": {"scheduling", "billing", "webhooks"},
    "scheduling": {"billing", "webhooks"},
    "billing": {"webhooks"},
}
CLOCK = "portal/clock.py"
CLOCK_READS = {
    "timezone": {"now"},
    "datetime": {"now", "utcnow", "today"},
    "date": {"today"},
    "time": {"time", "time_ns", "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns"},
}
# Names that read the clock when imported on their own.
CLOCK_MODULES = {"time": CLOCK_READS["time"], "django.utils.timezone": {"now"}}


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, root: Path) -> list[tuple[int, list[str]]]:
    """Every import statement of the file, anywhere in it: its line and the absolute dotted
    names it imports (`from a.b import c` imports a.b.c, a module or a name of a.b)."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    statements = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            statements.append((node.lineno, [alias.name for alias in node.names]))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = parts[: len(parts) - (node.level - 1)]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            statements.append((node.lineno, [f"{source}.{alias.name}" for alias in node.names]))
    return statements


def _rule_broken(module: str, imported: str) -> str | None:
    """The rule that `module` importing `imported` breaks, if any."""
    own_app, target_app = _app_of(module), _app_of(imported)
    standalone = next((package for package in STANDALONE if _within(module, package)), None)
    if standalone is not None:
        top = imported.split(".")[0]
        outside = (target_app or top == "portal") and not _within(imported, standalone)
        return standalone.rpartition(".")[2] if top in FRAMEWORKS or outside else None
    if own_app is None and target_app is not None:
        composing = any(_within(module, allowed) for allowed in COMPOSITION_ROOT)
        return None if composing else "kernel"
    if target_app in FORBIDDEN_APPS.get(own_app, ()):
        return f"{own_app} must not import {target_app}"
    return None


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _app_of(name: str) -> str | None:
    top = name.split(".")[0]
    return top if top in APPS else None


def violations(root: Path) -> list[str]:
    """Every broken rule in the source tree at `root`, one line per import statement."""
    found: list[str] = []
    app_edges: dict[tuple[str, str], str] = {}
    sources = [path for top in ("portal", *APPS) for path in sorted((root / top).rglob("*.py"))]
    for path in sources:
        if "migrations" in path.parts:
            continue
        module = module_name(path, root)
        for line, targets in imports_of(path, root):
            where = f"{path.relative_to(root)}:{line} imports {targets[0]}"
            broken = next(filter(None, (_rule_broken(module, t) for t in targets)), None)
            if broken:
                found.append(f"{broken}: {where}")
            own_app, target_app = _app_of(module), _app_of(targets[0])
            if own_app and target_app and own_app != target_app:
                app_edges.setdefault((own_app, target_app), where)
    for (first, second), where in sorted(app_edges.items()):
        if first < second and (second, first) in app_edges:
            found.append(f"cycle {first} <-> {second}: {where}; {app_edges[(second, first)]}")
    return found


def clock_reads(root: Path) -> list[str]:
    """Reads of the wall or monotonic clock anywhere but the kernel's clock and migrations."""
    found = []
    sources = [path for top in ("portal", *APPS) for path in sorted((root / top).rglob("*.py"))]
    for path in sources:
        where = path.relative_to(root)
        if "migrations" in path.parts or where.as_posix() == CLOCK:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                if node.attr in CLOCK_READS.get(node.value.id, ()):
                    found.append(f"{where}:{node.lineno} {node.value.id}.{node.attr}")
            elif isinstance(node, ast.ImportFrom) and node.module in CLOCK_MODULES:
                clocks = CLOCK_MODULES[node.module]
                found.extend(
                    f"{where}:{node.lineno} from {node.module} import {alias.name}"
                    for alias in node.names
                    if alias.name in clocks
                )
    return found


def test_every_import_follows_the_layering_rules():
    assert violations(ROOT) == []


def test_nothing_but_the_kernels_clock_reads_the_time():
    assert clock_reads(ROOT) == []


# The rules themselves, each shown failing on a deliberate bad import in a small tree.


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for top in ("portal", *APPS):
        (tmp_path / top).mkdir(exist_ok=True)
        (tmp_path / top / "__init__.py").touch()
    for relative, source in files.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        for folder in path.relative_to(tmp_path).parents:
            if str(folder) != ".":
                (tmp_path / folder / "__init__.py").touch()
        path.write_text(source)
    return tmp_path


@pytest.mark.parametrize(
    ("files", "rule"),
    [
        ({"scheduling/engine/x.py": "from django.db import models\n"}, "engine:"),
        ({"scheduling/engine/x.py": "def f():\n    import celery\n"}, "engine:"),
        ({"scheduling/engine/x.py": "from ..models import Workload\n"}, "engine:"),
        ({"scheduling/engine/sub/x.py": "from ...services import cycle\n"}, "engine:"),
        ({"scheduling/engine/x.py": "from portal.events import publish\n"}, "engine:"),
        ({"scheduling/engine/x.py": "from ..cluster.specs import Phase\n"}, "engine:"),
        (
            {"scheduling/cluster/x.py": "from scheduling.models import SimulatedObject\n"},
            "cluster:",
        ),
        ({"scheduling/cluster/x.py": "def f():\n    from ..services import cycle\n"}, "cluster:"),
        ({"scheduling/cluster/x.py": "from portal import clock\n"}, "cluster:"),
        ({"scheduling/cluster/x.py": "from portal.prometheus import Client\n"}, "cluster:"),
        ({"scheduling/cluster/x.py": "from tenants.models import Project\n"}, "cluster:"),
        ({"scheduling/cluster/x.py": "import billing.selectors\n"}, "cluster:"),
        ({"scheduling/cluster/x.py": "from django.db import transaction\n"}, "cluster:"),
        ({"scheduling/cluster/x.py": "from .specs import Phase\nimport kubernetes\n"}, None),
        (
            {"tenants/services/p.py": "def f():\n    from scheduling.tasks import t\n"},
            "tenants must not import scheduling",
        ),
        ({"tenants/x.py": "import billing.models\n"}, "tenants must not import billing"),
        ({"scheduling/x.py": "from billing import services\n"}, "scheduling must not import"),
        ({"tenants/x.py": "from webhooks import models\n"}, "tenants must not import webhooks"),
        (
            {"scheduling/services/x.py": "def f():\n    from webhooks.tasks import t\n"},
            "scheduling must not import webhooks",
        ),
        ({"billing/x.py": "import webhooks.services\n"}, "billing must not import webhooks"),
        (
            {"webhooks/a.py": "from billing.api.serializers import InvoiceOutput\n"},
            None,
        ),
        ({"portal/api/x.py": "from tenants.models import ApiToken\n"}, "kernel:"),
        ({"portal/console.py": "def f():\n    from tenants import services\n"}, "kernel:"),
        ({"portal/events.py": "from scheduling import tasks\n"}, "kernel:"),
        (
            {"billing/a.py": "from scheduling import selectors\n", "scheduling/b.py": ""},
            None,
        ),
    ],
    ids=[
        "engine-django",
        "engine-lazy-celery",
        "engine-relative-app",
        "engine-deep-relative",
        "engine-kernel",
        "engine-cluster",
        "cluster-models",
        "cluster-lazy-services",
        "cluster-clock",
        "cluster-metrics-client",
        "cluster-tenants",
        "cluster-billing",
        "cluster-django",
        "cluster-own-and-kubernetes",
        "tenants-lazy-scheduling",
        "tenants-billing",
        "scheduling-billing",
        "tenants-webhooks",
        "scheduling-lazy-webhooks",
        "billing-webhooks",
        "webhooks-renders-billing",
        "shared-api-helper",
        "console-lazy",
        "kernel-module",
        "billing-reads-scheduling",
    ],
)
def test_a_bad_import_is_caught_by_its_rule(tmp_path, files, rule):
    found = violations(_tree(tmp_path, files))
    if rule is None:
        assert found == []
    else:
        assert len(found) == 1 and found[0].startswith(rule), found


def test_two_apps_importing_each_other_are_a_cycle(tmp_path):
    files = {
        "billing/a.py": "from scheduling import selectors\n",
        "scheduling/b.py": "def f():\n    from billing.models import Invoice\n",
    }
    found = violations(_tree(tmp_path, files))
    assert any(line.startswith("cycle billing <-> scheduling") for line in found), found


def test_the_composition_root_may_import_the_apps(tmp_path):
    files = {"portal/management/commands/seed.py": "from tenants import services\n"}
    assert violations(_tree(tmp_path, files)) == []


@pytest.mark.parametrize(
    "source",
    [
        "from datetime import datetime\nnow = datetime.now()\n",
        "from datetime import datetime\nnow = datetime.utcnow()\n",
        "from datetime import date\nday = date.today()\n",
        "import time\nstarted = time.monotonic()\n",
        "import time\nstarted = time.perf_counter()\n",
        "from time import perf_counter\n",
    ],
    ids=["now", "utcnow", "date-today", "monotonic", "perf-counter", "imported-perf-counter"],
)
def test_a_clock_read_in_the_engine_is_caught(tmp_path, source):
    root = _tree(tmp_path, {"scheduling/engine/x.py": source})
    assert len(clock_reads(root)) == 1


@pytest.mark.parametrize(
    "source",
    [
        "from django.utils import timezone\nnow = timezone.now()\n",
        "from django.utils import timezone\ndefault = timezone.now\n",
        "from django.utils.timezone import now\n",
        "import time\nstamp = time.time()\n",
    ],
    ids=["timezone-now", "timezone-now-as-default", "imported-timezone-now", "time-time"],
)
def test_a_clock_read_in_an_app_is_caught(tmp_path, source):
    root = _tree(tmp_path, {"billing/services/x.py": source})
    assert len(clock_reads(root)) == 1


def test_the_kernels_clock_may_read_the_time(tmp_path):
    source = "from django.utils import timezone\nnow = timezone.now()\n"
    assert clock_reads(_tree(tmp_path, {"portal/clock.py": source})) == []
