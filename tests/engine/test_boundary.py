"""The engine stays pure Python: Django, DRF and Celery never leak into it."""

import ast
from pathlib import Path

import scheduling.engine

ENGINE = Path(scheduling.engine.__file__).parent
FORBIDDEN = ("django", "rest_framework", "celery", "kombu")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for statement in ast.walk(tree):
        if isinstance(statement, ast.Import):
            names.update(alias.name for alias in statement.names)
        elif isinstance(statement, ast.ImportFrom) and statement.module and not statement.level:
            names.add(statement.module)
    return names


def test_no_engine_module_imports_django_drf_or_celery():
    offenders = {
        f"{path.name}: {name}"
        for path in ENGINE.rglob("*.py")
        for name in imported_modules(path)
        if name.split(".")[0] in FORBIDDEN
    }
    assert offenders == set()


def test_the_engine_never_reads_the_clock():
    sources = "\n".join(path.read_text() for path in ENGINE.rglob("*.py"))
    assert "datetime.now(" not in sources and "time.time(" not in sources
