"""Output: tables for people, JSON or YAML (the API's objects as they came) for scripts."""

import json
import re
from collections.abc import Callable, Sequence

import click
import yaml
from rich.console import Console, ConsoleDimensions
from rich.table import Table

FORMATS = ("table", "json", "yaml")
# How wide a table may grow when the output is not a terminal.
PIPED_WIDTH = 1000


class Output(Console):
    """In a terminal, tables fit the window; piped into a script, a file or `grep`, each row
    stays on one line, as kubectl's do, so an id or a name is never folded in two."""

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        return size if self.is_terminal else ConsoleDimensions(PIPED_WIDTH, size.height)


stdout = Output(highlight=False, soft_wrap=False)

# A column: its header and the field it shows (a dotted path), or a function of the object.
Column = tuple[str, str | Callable[[dict], object]]


def value_of(item: dict, key: str | Callable[[dict], object]) -> object:
    if callable(key):
        return key(item)
    value: object = item
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


# An API time (ISO 8601, UTC): shown to the second, `2026-12-01 20:17:21Z`.
INSTANT = re.compile(r"^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})(?:\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def cell(value: object) -> str:
    """A value as a table shows it (JSON and YAML give the API's values untouched)."""
    if value is None or value == "" or value == []:
        return "-"
    if isinstance(value, str) and (instant := INSTANT.match(value)):
        return f"{instant[1]} {instant[2]}{instant[3]}"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(cell(item) for item in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={cell(v)}" for k, v in value.items())
    return str(value)


def machine(data: object, fmt: str) -> None:
    if fmt == "json":
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        click.echo(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), nl=False)


def table(items: Sequence[dict], columns: Sequence[Column], *, title: str | None = None) -> Table:
    grid = Table(title=title, box=None, header_style="bold", pad_edge=False)
    for header, _ in columns:
        grid.add_column(header, overflow="fold")
    for item in items:
        grid.add_row(*(cell(value_of(item, key)) for _, key in columns))
    return grid


def show_list(items: list, fmt: str, columns: Sequence[Column], *, empty: str) -> None:
    if fmt != "table":
        machine(items, fmt)
    elif not items:
        stdout.print(empty)
    else:
        stdout.print(table(items, columns))


def show_object(item: dict, fmt: str, fields: Sequence[Column] | None = None) -> None:
    """One object: field by field (``fields``, or every field that is not a list of objects)."""
    if fmt != "table":
        machine(item, fmt)
        return
    rows = fields or [
        (name, name)
        for name, value in item.items()
        if not (isinstance(value, list) and value and isinstance(value[0], dict))
    ]
    grid = Table(box=None, show_header=False, pad_edge=False)
    grid.add_column(style="bold")
    grid.add_column(overflow="fold")
    for header, key in rows:
        grid.add_row(header, cell(value_of(item, key)))
    stdout.print(grid)
