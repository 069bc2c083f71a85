"""gpuctl is a package of its own: no Django, no portal code; installed as a console script by
`make install`; a failure is told in a line, never a traceback; shell completion."""

import ast
import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner
from gpuctl.output import show_list

CLIENT = Path(__file__).resolve().parents[2] / "client" / "src" / "gpuctl"
PORTAL_ONLY = {"django", "rest_framework", "celery", "portal", "tenants", "scheduling", "billing"}
GPUCTL = Path(sys.executable).parent / "gpuctl"


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_the_client_imports_neither_django_nor_the_portal():
    found = {path.name: imported_roots(path) & PORTAL_ONLY for path in CLIENT.glob("*.py")}
    assert {name: roots for name, roots in found.items() if roots} == {}


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(GPUCTL), *args], capture_output=True, text=True, timeout=30, env=env)


def test_make_install_puts_the_gpuctl_command_into_the_virtualenv():
    result = run("--version")
    assert (result.returncode, result.stdout.strip()) == (0, "gpuctl, version 0.1.0")


def test_an_unreachable_portal_exits_4_in_one_line_without_a_traceback(tmp_path):
    env = {"XDG_CONFIG_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    env |= {"GPUCTL_URL": "http://127.0.0.1:9", "GPUCTL_TOKEN": "x"}
    result = run("ls", "--project", "p", "--org", "o", env=env)
    assert (result.returncode, "Traceback" in result.stderr) == (4, False)
    assert result.stderr.startswith("error: Cannot reach http://127.0.0.1:9")


def test_completion_prints_the_shells_script(gpuctl):
    result = gpuctl("completion", "bash")
    assert (result.exit_code, "_GPUCTL_COMPLETE=bash_complete" in result.stdout) == (0, True)


def test_completion_completes_command_names():
    env = {"_GPUCTL_COMPLETE": "bash_complete", "COMP_WORDS": "gpuctl inv", "COMP_CWORD": "1"}
    result = run(env={"PATH": "/usr/bin:/bin", **env})
    assert "invoices" in result.stdout


def test_completion_completes_options():
    env = {"_GPUCTL_COMPLETE": "bash_complete", "COMP_WORDS": "gpuctl ls --sta", "COMP_CWORD": "2"}
    assert "--state" in run(env={"PATH": "/usr/bin:/bin", **env}).stdout


def test_a_piped_table_keeps_each_row_on_one_line_however_narrow_the_terminal_says_it_is():
    long_id = "78cb00ce-bb5f-48b8-8098-6867e348c389"
    columns = [("ID", "id"), ("ORGANIZATION", "organization"), ("NOTE", "note")]
    rows = [{"id": long_id, "organization": "acme", "note": "x" * 120}]

    @click.command()
    def listing():
        show_list(rows, "table", columns, empty="none")

    shown = CliRunner().invoke(listing, env={"COLUMNS": "40"}).output
    assert long_id in shown and len(shown.splitlines()) == 2
