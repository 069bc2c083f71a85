"""The documentation: the README stays one page whose links work, the site (docs/, mkdocs.yml)
builds in strict mode, and the configuration reference names every variable the settings read."""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
README_MAX_LINES = 200
# [text](target): the target up to a space (a title) or the closing parenthesis.
MARKDOWN_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)[^)]*\)")
# os.environ.get("X", …), os.environ["X"], env_bool("X", …), env_list("X", …)
SETTINGS_VARIABLE = re.compile(
    r"""(?:environ\.get\(|environ\[|env_bool\(|env_list\()\s*["']([A-Z][A-Z0-9_]*)["']"""
)


def relative_links(markdown: str) -> list[str]:
    return [
        target
        for target in MARKDOWN_LINK.findall(markdown)
        if not re.match(r"^[a-z][a-z0-9+.-]*:", target) and not target.startswith("#")
    ]


def test_the_readme_is_under_200_lines():
    lines = README.read_text().splitlines()

    assert len(lines) < README_MAX_LINES, f"README.md has {len(lines)} lines"


def test_every_relative_link_of_the_readme_points_at_an_existing_file():
    links = relative_links(README.read_text())

    missing = [link for link in links if not (ROOT / link.split("#")[0]).exists()]
    assert links, "the README links into docs/"
    assert missing == []


def test_the_link_check_sees_relative_links_but_not_urls_or_anchors():
    text = '[a](docs/index.md) [b](https://example.com/x.md) [c](#top) [d](x.md#part "t")'

    assert relative_links(text) == ["docs/index.md", "x.md#part"]


def test_the_documentation_site_builds_in_strict_mode(tmp_path):
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=120,
    )

    assert build.returncode == 0, build.stderr
    assert (tmp_path / "index.html").exists()


def test_the_configuration_reference_names_every_variable_the_settings_read():
    read = {
        name
        for path in (ROOT / "portal" / "settings").glob("*.py")
        for name in SETTINGS_VARIABLE.findall(path.read_text())
    }
    reference = (ROOT / "docs" / "configuration.md").read_text()

    assert read
    assert sorted(name for name in read if f"`{name}`" not in reference) == []
