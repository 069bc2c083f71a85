"""The organization and the project a request's URL names, as its caller may reach them: the
one lookup of each that every console page and API endpoint of every app starts from
(``/orgs/<org_slug>/...``, ``/orgs/<org_slug>/projects/<project_slug>/...``). Another tenant's,
like one that does not exist, is a 404 (`NotFound`).

Here and not in the kernel (``portal/``): the kernel imports no app, and these read through
tenancy's selectors and its ``caller_of``; scheduling and billing may import tenants, so they
take them from here.
"""

from .models import Organization, Project
from .permissions import caller_of
from .selectors import organization_get, project_get_by_slugs


def organization_of(request, org_slug: str) -> Organization:
    """The organization, with the caller's role in it (``my_role``)."""
    return organization_get(caller=caller_of(request), slug=org_slug)


def project_of(request, org_slug: str, project_slug: str) -> Project:
    """The live project, in one query; its organization carries the caller's role
    (``my_role``)."""
    return project_get_by_slugs(
        caller=caller_of(request), org_slug=org_slug, project_slug=project_slug
    )
