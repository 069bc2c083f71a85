"""Projects: one Kubernetes namespace each; the cluster side follows through events."""

from django.core.exceptions import ValidationError
from django.db import transaction

from portal import clock
from portal.events import Event, publish

from ..models import NAMESPACE_MAX, Organization, Project
from ..permissions import Action, Caller, authorize
from .audit import audit_record
from .common import apply_changes, insert, validated

# Projects


def project_namespace(*, organization_slug: str, project_slug: str) -> str:
    return f"{organization_slug}-{project_slug}"


@transaction.atomic
def project_create(
    *, caller: Caller, organization: Organization, slug: str, name: str, description: str = ""
) -> Project:
    authorize(caller=caller, organization=organization, action=Action.PROJECT_CREATE)
    namespace = project_namespace(organization_slug=organization.slug, project_slug=slug)
    project = Project(
        organization=organization,
        slug=slug,
        name=name,
        description=description,
        namespace=namespace,
        created_by=caller.user,
    )
    validated(project, exclude=["namespace", "created_by"])
    live = Project.objects.filter(deleted_at__isnull=True)
    if live.filter(organization=organization, slug=slug).exists():
        raise ValidationError({"slug": f"{organization.slug} already has a project {slug!r}."})
    if len(namespace) > NAMESPACE_MAX:
        raise ValidationError(
            {"slug": f"The namespace {namespace!r} would exceed {NAMESPACE_MAX} characters."}
        )
    if live.filter(namespace=namespace).exists():
        raise ValidationError(
            {"slug": f"The Kubernetes namespace {namespace!r} is taken; choose another slug."}
        )
    insert(project, field="slug", message="This slug was just taken; choose another.")
    publish(Event.PROJECT_CREATED, project_id=str(project.pk))
    audit_record(
        caller=caller,
        organization=organization,
        action="project.create",
        target=project,
        payload={"slug": slug, "name": name, "namespace": namespace},
    )
    return project


@transaction.atomic
def project_update(
    *, caller: Caller, project: Project, name: str | None = None, description: str | None = None
) -> Project:
    authorize(caller=caller, organization=project.organization, action=Action.PROJECT_UPDATE)
    changes = apply_changes(project, name=name, description=description)
    if changes:
        validated(project, exclude=["created_by"]).save()
        audit_record(
            caller=caller,
            organization=project.organization,
            action="project.update",
            target=project,
            payload=changes,
        )
    return project


@transaction.atomic
def project_delete(*, caller: Caller, project: Project) -> None:
    """Hide the project at once; a worker then stops its workloads and removes its namespace."""
    authorize(caller=caller, organization=project.organization, action=Action.PROJECT_DELETE)
    project.deleted_at = clock.wall()
    project.save(update_fields=["deleted_at", "updated_at"])
    audit_record(
        caller=caller,
        organization=project.organization,
        action="project.delete",
        target=project,
        payload={"namespace": project.namespace},
    )
    publish(Event.PROJECT_DELETED, project_id=str(project.pk))
