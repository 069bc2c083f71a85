"""Appending one benchmark run to bench/RESULTS.md: figures, rerun command, date, machine."""

from __future__ import annotations

import json
import os
import platform
import shlex
from datetime import UTC, datetime
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def machine() -> str:
    model = "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{os.cpu_count()} cores, {model}, Python {platform.python_version()}"


def append_results(*, bench: str, argv: list[str], figures: dict) -> None:
    command = "nice python " + " ".join(
        shlex.quote(a) for a in ["bench/" + Path(argv[0]).name, *argv[1:]]
    )
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    entry = (
        f"\n### {bench}, {stamp}\n\n"
        f"- machine: {machine()}\n"
        f"- rerun: `{command}`\n\n"
        f"```json\n{json.dumps(figures)}\n```\n"
    )
    with RESULTS.open("a") as handle:
        handle.write(entry)
