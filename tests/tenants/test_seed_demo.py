import io

import pytest
from django.core.management import call_command

from tenants.models import AuditEvent, Membership, Organization

pytestmark = pytest.mark.django_db


def test_the_demo_has_acme_with_two_projects_an_owner_and_a_member():
    call_command("seed_demo", stdout=io.StringIO())
    acme = Organization.objects.get(slug="acme")
    assert sorted(acme.projects.values_list("slug", flat=True)) == ["ai-dev", "ai-prod"]
    roles = dict(Membership.objects.filter(organization=acme).values_list("user__email", "role"))
    assert roles == {"alice@acme.example": "owner", "bob@acme.example": "member"}


def test_seeding_twice_changes_nothing():
    call_command("seed_demo", stdout=io.StringIO())
    events = AuditEvent.objects.count()
    call_command("seed_demo", stdout=io.StringIO())
    assert AuditEvent.objects.count() == events


def test_the_demo_without_history_has_acme_but_no_recorded_days_of_the_others():
    from scheduling.models import Workload

    call_command("seed_demo", without_history=True, stdout=io.StringIO())
    seeded = set(Workload.objects.values_list("project__organization__slug", flat=True))
    assert (Organization.objects.filter(slug="acme").exists(), seeded) == (True, {"acme"})
