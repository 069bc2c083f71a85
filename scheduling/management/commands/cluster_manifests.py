"""Print, as one YAML stream, every object the portal would apply for the current database:
priority classes, node labels and taints, and each project's namespace objects."""

import yaml
from django.core.management.base import BaseCommand, CommandError

from scheduling.services import cluster_manifests
from tenants.models import Organization


class Command(BaseCommand):
    help = "Print every Kubernetes object the portal would apply (a dry run to read and diff)."

    def add_arguments(self, parser):
        parser.add_argument("--org", help="Only this organization's projects (by slug).")

    def handle(self, *args, org=None, **options):
        organization = None
        if org:
            organization = Organization.objects.filter(slug=org).first()
            if organization is None:
                raise CommandError(f"No organization {org!r}.")
        self.stdout.write(
            yaml.safe_dump_all(cluster_manifests(organization=organization), sort_keys=False),
            ending="",
        )
