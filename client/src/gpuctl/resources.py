"""The shapes most commands share: list something (every page, as a table or JSON/YAML), show
one object, act on one object (POST …/<id>/<verb>/)."""

from collections.abc import Callable, Sequence

import click

from .output import Column, show_list, show_object
from .session import Session, scoped

PathOf = Callable[[Session], str]


def org(rest: str) -> PathOf:
    return lambda session: session.org_path(rest)


def operator(rest: str) -> PathOf:
    """A path of the operator API (`/api/v1/operator/`)."""
    return lambda session: f"operator/{rest}"


def lister(
    name: str,
    help: str,
    path: PathOf,
    columns: Sequence[Column],
    *,
    empty: str,
    options: Sequence[Callable] = (),
    paged: bool = True,
) -> click.Command:
    """A command listing ``path`` (``paged``: a paginated list, read page by page); each option
    (a ``click.option``) becomes a query filter."""

    def run(session: Session, **filters):
        items = session.api.list(path(session), paged=paged, **filters)
        show_list(items, session.output, columns, empty=empty)

    run = scoped()(run)
    for option in options:
        run = option(run)
    return click.command(name, help=help)(run)


def getter(name: str, help: str, path: PathOf, fields: Sequence[Column] | None = None):
    """A command showing ``path`` + ID."""

    def run(session: Session, object_id: str):
        show_object(session.api.get(f"{path(session)}{object_id}/"), session.output, fields)

    run = scoped()(run)
    return click.command(name, help=help)(click.argument("object_id", metavar="ID")(run))


def actor(
    name: str,
    help: str,
    path: PathOf,
    verb: str,
    fields: Sequence[Column] | None = None,
    *,
    options: Sequence[Callable] = (),
):
    """A command POSTing ``path`` + ID + ``verb``/ and showing what the API answers; each option
    (a ``click.option``) becomes a field of the request's body."""

    def run(session: Session, object_id: str, **given):
        answer = session.api.post(f"{path(session)}{object_id}/{verb}/", body(**given) or None)
        show_object(answer, session.output, fields)

    run = scoped()(run)
    for option in reversed(options):
        run = option(run)
    return click.command(name, help=help)(click.argument("object_id", metavar="ID")(run))


def body(**fields) -> dict:
    """A request body of the options given (None: left out, so the API's default applies)."""
    return {name: value for name, value in fields.items() if value is not None}


def resource_group(
    name: str,
    help: str,
    rest: str,
    columns: Sequence[Column],
    *,
    plural: str,
    singular: str | None = None,
    options: Sequence[Callable] = (),
    paged: bool = True,
) -> click.Group:
    """A command group for one of the organization's collections (``rest`` under its path):
    ``ls``, and ``get ID`` when ``singular`` names one item."""
    group = click.Group(name, help=help)
    path = org(rest)
    group.add_command(
        lister(
            "ls",
            f"List the organization's {plural}.",
            path,
            columns,
            empty=f"No {plural}.",
            options=options,
            paged=paged,
        )
    )
    if singular:
        group.add_command(getter("get", f"Show {singular}.", path))
    return group
