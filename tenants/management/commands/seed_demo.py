"""Seed the demo: organization "acme" with projects ai-dev and ai-prod, an owner, a member and
an operator. Idempotent: running it again changes nothing and prints the same logins."""

import os

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from tenants import services
from tenants.models import Organization, Project, Role
from tenants.permissions import Caller

DEMO_PASSWORD = os.environ.get("DEMO_PASSWORD", "gpu-demo-2026")
OPERATOR_EMAIL = "ops@example.com"
OWNER_EMAIL = "alice@acme.example"
MEMBER_EMAIL = "bob@acme.example"


def _user(email: str, **extra):
    existing = get_user_model().objects.filter(email__iexact=email).first()
    return existing or services.user_create(email=email, password=DEMO_PASSWORD, **extra)


class Command(BaseCommand):
    help = "Create the demo organization, users and projects (idempotent)."

    @transaction.atomic
    def handle(self, *args, **options):
        _user(OPERATOR_EMAIL, is_staff=True, is_superuser=True)
        owner = _user(OWNER_EMAIL, first_name="Alice", last_name="Owner")
        member = _user(MEMBER_EMAIL, first_name="Bob", last_name="Member")
        owner_caller = Caller(user=owner)

        acme = Organization.objects.filter(slug="acme").first() or services.organization_create(
            caller=owner_caller, slug="acme", name="Acme AI", billing_email="billing@acme.example"
        )
        for slug, name in (("ai-dev", "AI development"), ("ai-prod", "AI production")):
            if not Project.objects.filter(organization=acme, slug=slug).exists():
                services.project_create(
                    caller=owner_caller, organization=acme, slug=slug, name=name
                )
        if not acme.memberships.filter(user=member).exists():
            invitation = services.member_invite(
                caller=owner_caller, organization=acme, email=MEMBER_EMAIL, role=Role.MEMBER
            )
            services.invitation_accept(user=member, token=services.invitation_token(invitation))

        self.stdout.write(self.style.SUCCESS("Demo data ready. Sign in at /accounts/login/ with:"))
        for email, what in (
            (OWNER_EMAIL, "owner of acme"),
            (MEMBER_EMAIL, "member of acme"),
            (OPERATOR_EMAIL, "operator, /admin/"),
        ):
            self.stdout.write(f"  {email:<22} {DEMO_PASSWORD}   ({what})")
