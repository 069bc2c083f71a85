"""A command's session: the context it talks through (URL, token, organization, project), the
API client, the output format; and the options every command takes to choose them."""

import functools

import click

from . import config
from .api import Api
from .output import FORMATS


class Session:
    def __init__(self, target: config.Context, output: str, *, project_flag: str | None = None):
        self.target = target
        self.project_flag = project_flag
        self.output = output
        self.api = Api(target.url, target.token)

    def close(self) -> None:
        self.api.close()

    @property
    def org(self) -> str:
        """The organization: ``--org``, the context's, or the token's only one."""
        if not self.target.organization:
            memberships = self.api.get("me/memberships/")
            if len(memberships) != 1:
                raise click.UsageError(
                    "Which organization? Pass --org or set one: gpuctl context set --org ORG."
                )
            self.target.organization = memberships[0]["organization"]
        return self.target.organization

    @property
    def project(self) -> str:
        """The project: ``--project``, the context's, or the organization's only one."""
        if not self.target.project:
            projects = self.api.list(self.org_path("projects/"), limit=2)
            if len(projects) != 1:
                raise click.UsageError(
                    "Which project? Pass --project or set one: gpuctl context set --project P."
                )
            self.target.project = projects[0]["slug"]
        return self.target.project

    def org_path(self, rest: str = "") -> str:
        return f"organizations/{self.org}/{rest}"

    def project_path(self, rest: str = "") -> str:
        return f"organizations/{self.org}/projects/{self.project}/{rest}"


def workload_path(session: Session, name: str, rest: str = "") -> str:
    return session.project_path(f"workloads/{name}/{rest}")


def scoped(*, project: bool = False):
    """A command that talks to the API: it takes ``--context``, ``--org``, ``-o`` (and
    ``--project``) and is called with a ``Session`` first."""

    def decorate(command):
        @functools.wraps(command)
        def run(context_name, org_slug, output, project_slug=None, **kwargs):
            target = config.resolve(context=context_name, org=org_slug, project=project_slug)
            session = Session(target, output, project_flag=project_slug)
            try:
                return command(session, **kwargs)
            finally:
                session.close()

        options = [
            click.option(
                "--context", "context_name", help="The context to use (else the current)."
            ),
            click.option("--org", "org_slug", help="The organization (else the context's)."),
            click.option(
                "-o",
                "--output",
                type=click.Choice(FORMATS),
                default="table",
                show_default=True,
                help="A table for people, JSON or YAML for scripts.",
            ),
        ]
        if project:
            options.append(
                click.option(
                    "-p", "--project", "project_slug", help="The project (else the context's)."
                )
            )
        for option in reversed(options):
            run = option(run)
        return run

    return decorate
