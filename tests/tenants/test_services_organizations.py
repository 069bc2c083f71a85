import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from portal.errors import Conflict
from tenants import services
from tenants.models import AuditEvent, Membership, Organization, Role
from tenants.permissions import Caller, OrganizationSuspended

from ..factories import ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_the_creator_of_an_organization_becomes_its_owner(otto):
    organization = services.organization_create(caller=Caller(user=otto), slug="newco", name="New")
    membership = Membership.objects.get(organization=organization, user=otto)
    assert membership.role == Role.OWNER


def test_creating_an_organization_is_audited_with_its_owner(otto):
    organization = services.organization_create(caller=Caller(user=otto), slug="newco", name="New")
    actions = set(
        AuditEvent.objects.filter(organization=organization).values_list("action", flat=True)
    )
    assert actions == {"organization.create", "member.add"}


def test_an_invalid_slug_creates_nothing(otto):
    with pytest.raises(ValidationError) as error:
        services.organization_create(caller=Caller(user=otto), slug="New_Co", name="New")
    assert "slug" in error.value.message_dict
    assert not Organization.objects.exists()
    assert not AuditEvent.objects.exists()


def test_a_taken_slug_is_a_field_error(acme, otto):
    with pytest.raises(ValidationError) as error:
        services.organization_create(caller=Caller(user=otto), slug="acme", name="Again")
    assert "slug" in error.value.message_dict


def test_an_api_token_cannot_create_organizations(alice, acme, token_for):
    token, _ = token_for(alice, acme)
    with pytest.raises(PermissionDenied):
        services.organization_create(caller=Caller(user=alice, token=token), slug="x1", name="X")


def test_updating_records_the_changed_fields_in_the_audit_trail(alice, acme):
    services.organization_update(caller=Caller(user=alice), organization=acme, name="Acme Labs")
    event = AuditEvent.objects.get(action="organization.update")
    assert event.payload == {"name": {"from": "Acme AI", "to": "Acme Labs"}}


def test_an_update_that_changes_nothing_writes_no_audit_event(alice, acme):
    services.organization_update(caller=Caller(user=alice), organization=acme, name="Acme AI")
    assert not AuditEvent.objects.filter(action="organization.update").exists()


def test_an_organization_with_projects_cannot_be_deleted(alice, acme, ai_dev):
    with pytest.raises(Conflict) as error:
        services.organization_delete(caller=Caller(user=alice), organization=acme)
    assert error.value.code == "organization_has_projects"
    assert Organization.objects.filter(pk=acme.pk).exists()


def test_deleting_an_organization_keeps_its_audit_trail_for_operators(alice, acme):
    services.organization_delete(caller=Caller(user=alice), organization=acme)
    assert not Organization.objects.filter(pk=acme.pk).exists()
    assert AuditEvent.objects.filter(action="organization.delete", organization=None).exists()


def test_only_operators_can_suspend_an_organization(alice, acme):
    with pytest.raises(PermissionDenied):
        services.organization_suspend(caller=Caller(user=alice), organization=acme)
    acme.refresh_from_db()
    assert acme.is_active


def test_a_suspended_organization_cannot_create_projects(alice, acme):
    operator = UserFactory(is_staff=True)
    services.organization_suspend(caller=Caller(user=operator), organization=acme, reason="unpaid")
    acme.refresh_from_db()
    with pytest.raises(OrganizationSuspended):
        services.project_create(caller=Caller(user=alice), organization=acme, slug="p1", name="P")
    assert not acme.projects.exists()


def test_a_reactivated_organization_can_create_again(alice, acme):
    operator = Caller(user=UserFactory(is_staff=True))
    services.organization_suspend(caller=operator, organization=acme)
    services.organization_reactivate(caller=operator, organization=acme)
    acme.refresh_from_db()
    project = services.project_create(
        caller=Caller(user=alice), organization=acme, slug="p1", name="P"
    )
    assert project.namespace == "acme-p1"


def test_suspension_is_audited_with_its_reason(acme):
    operator = Caller(user=UserFactory(is_staff=True))
    services.organization_suspend(caller=operator, organization=acme, reason="unpaid invoice")
    event = AuditEvent.objects.get(action="organization.suspend")
    assert event.payload == {"reason": "unpaid invoice"}


def test_a_suspended_organization_still_reads(alice, acme):
    ProjectFactory(organization=acme)
    services.organization_suspend(caller=Caller(user=UserFactory(is_staff=True)), organization=acme)
    from tenants import selectors

    assert selectors.project_list(caller=Caller(user=alice), organization=acme).count() == 1
