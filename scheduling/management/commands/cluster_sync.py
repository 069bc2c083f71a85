"""Load the cluster description (simulated cluster), sync the node inventory and provision the
cluster-wide objects, at once rather than on the worker's next beat."""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from scheduling import services
from scheduling.backends import get_backend


class Command(BaseCommand):
    help = "Sync GPU classes, pools, tiers and nodes from the cluster, and provision it."

    def handle(self, *args, **options):
        backend = get_backend()
        if settings.PORTAL_CLUSTER == "simulated":
            services.cluster_description_apply(path=Path(settings.PORTAL_SIMULATED_CLUSTER))
        services.inventory_sync(backend=backend)
        record = services.cluster_provision(backend=backend)
        self.stdout.write(f"Cluster provisioning: {record.state}")
