"""Races that only a real database shows: these run on PostgreSQL (CI), with one connection per
thread."""

import pytest
from django.db import connection

from tenants import services
from tenants.models import Membership, Project, Role
from tenants.permissions import Caller

from ..factories import MembershipFactory, OrganizationFactory
from ..threads import run_together

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("row locks are exercised on PostgreSQL; set DATABASE_URL (see README)")


def test_two_owners_demoting_each_other_at_once_leave_one_owner():
    organization = OrganizationFactory()
    first = MembershipFactory(organization=organization, role=Role.OWNER)
    second = MembershipFactory(organization=organization, role=Role.OWNER)
    outcomes = run_together(
        lambda: services.member_role_change(
            caller=Caller(user=first.user), membership=second, role=Role.ADMIN
        ),
        lambda: services.member_role_change(
            caller=Caller(user=second.user), membership=first, role=Role.ADMIN
        ),
    )
    owners = Membership.objects.filter(organization=organization, role=Role.OWNER).count()
    assert owners == 1
    assert sum(isinstance(o, Exception) for o in outcomes) == 1


def test_two_projects_racing_for_one_slug_make_one_project_and_one_field_error():
    organization = OrganizationFactory()
    owner = MembershipFactory(organization=organization, role=Role.OWNER).user
    outcomes = run_together(
        *[
            lambda: services.project_create(
                caller=Caller(user=owner), organization=organization, slug="race", name="R"
            )
        ]
        * 2
    )
    assert Project.objects.filter(organization=organization).count() == 1
    errors = [o for o in outcomes if isinstance(o, Exception)]
    assert len(errors) == 1 and "slug" in errors[0].message_dict
