"""Appending one benchmark run to bench/RESULTS.md: figures, rerun command, date, machine."""

from __future__ import annotations

import json
import os
import platform
import shlex
import statistics
import time
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


def calibration_seconds() -> float:
    """The median time of a fixed piece of pure-Python work, to compare machines and moments:
    a timing is read against the calibration measured beside it (machines here differ by 2.5x
    from one session to the next)."""
    runs = []
    for _ in range(5):
        started = time.perf_counter()
        total = 0
        for number in range(2_000_000):
            total += number * number % 7
        runs.append(time.perf_counter() - started)
    return round(statistics.median(runs), 3)


def append_results(*, bench: str, argv: list[str], figures: dict) -> None:
    command = "nice python " + " ".join(
        shlex.quote(a) for a in ["bench/" + Path(argv[0]).name, *argv[1:]]
    )
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    entry = (
        f"\n### {bench}, {stamp}\n\n"
        f"- machine: {machine()}; calibration "
        f"{figures.get('calibration_s') or calibration_seconds()} s\n"
        f"- rerun: `{command}`\n\n"
        f"```json\n{json.dumps(figures)}\n```\n"
    )
    with RESULTS.open("a") as handle:
        handle.write(entry)
