"""No module of the portal grows past 500 lines (issue 22): past that, a module holds more than
one concern and the next reader loses the thread. Migrations, tests and benchmarks are exempt."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE = ("portal", "tenants", "scheduling", "billing", "webhooks", "client")
MOST_LINES = 500


def modules_too_long(root: Path) -> list[str]:
    found = []
    for top in CODE:
        for path in sorted((root / top).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            lines = len(path.read_text().splitlines())
            if lines > MOST_LINES:
                found.append(f"{path.relative_to(root)}: {lines} lines")
    return found


def test_no_module_is_over_500_lines():
    assert modules_too_long(ROOT) == []


def test_a_module_over_500_lines_is_named(tmp_path):
    (tmp_path / "billing" / "migrations").mkdir(parents=True)
    (tmp_path / "billing" / "long.py").write_text("x = 1\n" * 501)
    (tmp_path / "billing" / "short.py").write_text("x = 1\n" * 500)
    (tmp_path / "billing" / "migrations" / "0001_long.py").write_text("x = 1\n" * 900)
    assert modules_too_long(tmp_path) == ["billing/long.py: 501 lines"]
