import pytest
from django.core.exceptions import ValidationError

from tenants import selectors, services
from tenants.models import AuditEvent, Project
from tenants.permissions import Caller

from ..factories import OrganizationFactory, ProjectFactory

pytestmark = pytest.mark.django_db


def test_a_project_gets_the_namespace_organization_dash_project(alice, acme):
    project = services.project_create(
        caller=Caller(user=alice), organization=acme, slug="ai-dev", name="Dev"
    )
    assert project.namespace == "acme-ai-dev"


def test_creating_a_project_is_audited(alice, acme):
    project = services.project_create(
        caller=Caller(user=alice), organization=acme, slug="ai-dev", name="Dev"
    )
    event = AuditEvent.objects.get(action="project.create")
    assert (event.actor, event.target_id) == (alice, str(project.pk))
    assert event.payload["namespace"] == "acme-ai-dev"


def test_a_slug_taken_in_the_organization_is_a_field_error(alice, acme, ai_dev):
    with pytest.raises(ValidationError) as error:
        services.project_create(
            caller=Caller(user=alice), organization=acme, slug="ai-dev", name="X"
        )
    assert "slug" in error.value.message_dict


def test_the_same_slug_in_another_organization_is_fine(alice, acme, globex):
    ProjectFactory(organization=globex, slug="ai-dev")
    project = services.project_create(
        caller=Caller(user=alice), organization=acme, slug="ai-dev", name="Dev"
    )
    assert project.organization == acme


def test_a_namespace_collision_across_organizations_is_a_slug_error(alice, acme):
    # "acme" + "x-ai" and "acme-x" + "ai" both make the namespace "acme-x-ai".
    ProjectFactory(organization=OrganizationFactory(slug="acme-x"), slug="ai")
    with pytest.raises(ValidationError) as error:
        services.project_create(caller=Caller(user=alice), organization=acme, slug="x-ai", name="X")
    assert "acme-x-ai" in error.value.message_dict["slug"][0]
    assert not Project.objects.filter(organization=acme).exists()


def test_a_slug_that_is_not_a_dns_label_is_refused(alice, acme):
    with pytest.raises(ValidationError) as error:
        services.project_create(
            caller=Caller(user=alice), organization=acme, slug="AI_dev", name="X"
        )
    assert "slug" in error.value.message_dict


def test_updating_a_project_changes_name_and_description_only(alice, acme, ai_dev):
    services.project_update(
        caller=Caller(user=alice), project=ai_dev, name="Renamed", description="GPU research"
    )
    ai_dev.refresh_from_db()
    assert (ai_dev.name, ai_dev.description, ai_dev.namespace) == (
        "Renamed",
        "GPU research",
        "acme-ai-dev",
    )


def test_deleting_a_project_is_audited_with_its_namespace(alice, acme, ai_dev):
    services.project_delete(caller=Caller(user=alice), project=ai_dev)
    assert AuditEvent.objects.get(action="project.delete").payload == {"namespace": "acme-ai-dev"}


def test_a_deleted_project_is_hidden_but_kept_for_its_history(alice, acme, ai_dev):
    services.project_delete(caller=Caller(user=alice), project=ai_dev)
    ai_dev.refresh_from_db()
    assert ai_dev.deleted_at is not None
    assert not selectors.project_list(caller=Caller(user=alice), organization=acme).exists()


def test_the_slug_of_a_deleted_project_can_be_used_again(alice, acme, ai_dev):
    services.project_delete(caller=Caller(user=alice), project=ai_dev)
    again = services.project_create(
        caller=Caller(user=alice), organization=acme, slug="ai-dev", name="Again"
    )
    assert again.namespace == "acme-ai-dev"
