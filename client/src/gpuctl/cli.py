"""gpuctl's root command, logging in, contexts and shell completion; the other commands live in
their own modules and are added here."""

import os
import sys
from urllib.parse import urlsplit

import click
from click.shell_completion import get_completion_class

from . import __version__, config
from .api import Api
from .errors import ApiError, GpuctlError, NotLoggedIn, stderr
from .output import FORMATS, machine, show_list, stdout

EPILOG = (
    "Exit codes: 0 ok, 1 the API refused, 2 bad usage, 3 not logged in or not allowed, "
    "4 the portal unreachable or failing, 5 a wait ended otherwise. Manual: docs/users/cli.md."
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, epilog=EPILOG)
@click.version_option(__version__, prog_name="gpuctl")
def cli():
    """gpuctl: GPU workloads, reservations, quotas, orders and invoices of the GPU Cloud Portal,
    from a terminal."""


@cli.command()
@click.argument("url")
@click.option("--token", help="An API token of the portal (asked for when left out).")
@click.option("--context", "name", help="Name the context (default: the organization).")
@click.option("--org", "org_slug", help="The default organization (default: the token's).")
@click.option("-p", "--project", "project_slug", help="The default project.")
def login(url, token, name, org_slug, project_slug):
    """Log in to the portal at URL with an API token, checked against the API and stored in a
    context (mode 0600), which becomes the current one."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise click.BadParameter("a URL such as https://portal.example.com", param_hint="URL")
    token = token or click.prompt("API token", hide_input=True)
    api = Api(url, token)
    try:
        memberships = api.get("me/memberships/")
        orgs = [m["organization"] for m in memberships]
        if org_slug and org_slug not in orgs:
            raise GpuctlError(f"The token is not for organization {org_slug!r}.", exit_code=3)
        org_slug = org_slug or (orgs[0] if len(orgs) == 1 else None)
        if org_slug and not project_slug:
            projects = api.list(f"organizations/{org_slug}/projects/", limit=2)
            project_slug = projects[0]["slug"] if len(projects) == 1 else None
        who = ", ".join(f"{m['organization']} ({m['role']})" for m in memberships)
        who = f"{memberships[0]['user']['email']}, {who}" if memberships else _operator(api)
    finally:
        api.close()
    settings = config.load()
    name = name or org_slug or parts.hostname
    settings["contexts"][name] = config.Context(
        url=url.rstrip("/"), token=token, organization=org_slug, project=project_slug
    )
    settings["current"] = name
    path = config.save(settings)
    stdout.print(f"Logged in to {url}: {who}. Context {name!r} in {path}.")


def _operator(api: Api) -> str:
    """A token of no organization: an operator token reaches the operator API (any other
    caller gets a 404 there)."""
    try:
        api.list("operator/pools/", limit=1)
    except ApiError as error:
        raise GpuctlError(
            "The token reaches no organization and no operator API.", exit_code=3
        ) from error
    return "the operator API"


@cli.group()
def context():
    """Contexts: several portals, or organizations of one, each with its token."""


@context.command("ls")
@click.option("-o", "--output", type=click.Choice(FORMATS), default="table", show_default=True)
def context_ls(output):
    """List the contexts (tokens are never shown)."""
    settings = config.load()
    rows = [
        {
            "current": name == settings["current"],
            "name": name,
            "url": c.url,
            "organization": c.organization,
            "project": c.project,
        }
        for name, c in settings["contexts"].items()
    ]
    show_list(
        rows,
        output,
        [
            ("", lambda r: "*" if r["current"] else ""),
            ("NAME", "name"),
            ("URL", "url"),
            ("ORGANIZATION", "organization"),
            ("PROJECT", "project"),
        ],
        empty="No contexts: gpuctl login URL.",
    )


def _known(settings: dict, name: str) -> None:
    if name not in settings["contexts"]:
        raise click.BadParameter(f"no context {name!r} (gpuctl context ls)", param_hint="NAME")


@context.command("use")
@click.argument("name")
def context_use(name):
    """Make NAME the current context."""
    settings = config.load()
    _known(settings, name)
    settings["current"] = name
    config.save(settings)
    stdout.print(f"Using context {name!r}.")


@context.command("rm")
@click.argument("name")
def context_rm(name):
    """Forget context NAME and its token (the token stays valid: revoke it with gpuctl tokens
    revoke)."""
    settings = config.load()
    _known(settings, name)
    del settings["contexts"][name]
    if settings["current"] == name:
        settings["current"] = next(iter(settings["contexts"]), None)
    config.save(settings)
    stdout.print(f"Removed context {name!r}.")


@context.command("set")
@click.argument("name", required=False)
@click.option("--org", "org_slug", help="The default organization.")
@click.option("-p", "--project", "project_slug", help="The default project.")
def context_set(name, org_slug, project_slug):
    """Set the default organization or project of context NAME (else the current one)."""
    settings = config.load()
    name = name or settings["current"]
    if not name:
        raise NotLoggedIn("No context: gpuctl login URL.")
    _known(settings, name)
    chosen = settings["contexts"][name]
    if org_slug:
        chosen.organization, chosen.project = org_slug, None
    if project_slug:
        chosen.project = project_slug
    config.save(settings)
    machine(
        {"context": name, "organization": chosen.organization, "project": chosen.project}, "yaml"
    )


@cli.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell):
    """Print the shell completion script: eval "$(gpuctl completion bash)" in ~/.bashrc."""
    complete = get_completion_class(shell)(cli, {}, "gpuctl", "_GPUCTL_COMPLETE")
    click.echo(complete.source())


def _register() -> None:
    from . import admin, tenant, webhooks, workloads

    for module in (workloads, tenant, webhooks):
        for command in module.COMMANDS:
            cli.add_command(command)
    cli.add_command(admin.admin)


_register()


def main() -> None:
    """The console script: Click prints usage errors (2) and our errors (their codes); anything
    else is a bug, told in one line (GPUCTL_DEBUG=1 shows the traceback)."""
    try:
        cli.main(prog_name="gpuctl")
    except Exception as error:
        if os.environ.get("GPUCTL_DEBUG"):
            raise
        stderr.print(f"[bold red]gpuctl failed:[/] {type(error).__name__}: {error}")
        sys.exit(1)
