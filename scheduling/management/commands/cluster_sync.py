"""Load the cluster description (simulated clusters), sync each cluster's node inventory and
provision it, at once rather than on the worker's next beat."""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from scheduling import services
from scheduling.backends import backend_for
from scheduling.models import Cluster


class Command(BaseCommand):
    help = "Sync GPU classes, clusters, pools, tiers and nodes from the clusters; provision them."

    def handle(self, *args, **options):
        if settings.PORTAL_CLUSTER == "simulated":
            services.cluster_description_apply(path=Path(settings.PORTAL_SIMULATED_CLUSTER))
        for cluster in Cluster.objects.all():
            backend = backend_for(cluster)
            services.inventory_sync(backend=backend, cluster=cluster)
            record = services.cluster_provision(backend=backend, cluster=cluster)
            self.stdout.write(f"Cluster {cluster.name} provisioning: {record.state}")
