"""Provisioning records per cluster: one per project and cluster, and one per cluster for the
cluster-wide objects. Every cluster ran each project's provisioning and wrote the one record
(the last to finish won), so each cluster is given a copy of it; a record made before any
cluster existed keeps no cluster. Back: one record per project (a failed one if any, else the
latest) and one cluster-wide record."""

from django.db import migrations


def records_to_clusters(apps, schema_editor):
    Cluster = apps.get_model("scheduling", "Cluster")
    ProvisioningRecord = apps.get_model("scheduling", "ProvisioningRecord")
    clusters = list(Cluster.objects.order_by("name"))
    if not clusters:
        return
    for record in ProvisioningRecord.objects.filter(cluster__isnull=True):
        copies = ProvisioningRecord.objects.bulk_create(
            ProvisioningRecord(
                project_id=record.project_id,
                cluster=cluster,
                scope=record.scope,
                state=record.state,
                error=record.error,
                attempts=record.attempts,
                provisioned_at=record.provisioned_at,
            )
            for cluster in clusters[1:]
        )
        # update() keeps the time it was last written, which the reconciler reads.
        ProvisioningRecord.objects.filter(pk__in=[copy.pk for copy in copies]).update(
            updated_at=record.updated_at
        )
        ProvisioningRecord.objects.filter(pk=record.pk).update(cluster=clusters[0])


def records_to_one(apps, schema_editor):
    ProvisioningRecord = apps.get_model("scheduling", "ProvisioningRecord")
    kept: dict = {}
    for record in ProvisioningRecord.objects.order_by("updated_at"):
        shown = kept.get(record.project_id)
        if shown is None or shown.state != "failed" or record.state == "failed":
            kept[record.project_id] = record
    ProvisioningRecord.objects.exclude(pk__in=[r.pk for r in kept.values()]).delete()
    ProvisioningRecord.objects.update(cluster=None)


class Migration(migrations.Migration):

    dependencies = [
        ('scheduling', '0036_provisioning_per_cluster'),
    ]

    operations = [
        migrations.RunPython(records_to_clusters, records_to_one),
    ]
