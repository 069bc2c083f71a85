"""Provisioning records per cluster: one per project and cluster, and one per cluster for the
cluster-wide objects. Every cluster ran each project's provisioning and wrote the one record
(the last to finish won), so each cluster is given a copy of it; a record made before any
cluster existed keeps no cluster. Back: one record per project (a failed one if any, else the
latest) and one cluster-wide record."""

import django.db.models.deletion
from django.db import migrations, models


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
        ('scheduling', '0035_scheduler_places_written_at'),
        ('tenants', '0001_initial'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='provisioningrecord',
            name='provisioning_cluster_unique',
        ),
        migrations.AlterField(
            model_name='provisioningrecord',
            name='project',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='provisioning_records', to='tenants.project'),
        ),
        migrations.AddField(
            model_name='provisioningrecord',
            name='cluster',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='provisioning_records', to='scheduling.cluster'),
        ),
        migrations.AlterModelOptions(
            name='provisioningrecord',
            options={'ordering': ['project_id', 'cluster__name']},
        ),
        migrations.RunPython(records_to_clusters, records_to_one),
        migrations.AddConstraint(
            model_name='provisioningrecord',
            constraint=models.UniqueConstraint(condition=models.Q(('cluster__isnull', False), ('project__isnull', False)), fields=('project', 'cluster'), name='provisioning_project_cluster_unique'),
        ),
        migrations.AddConstraint(
            model_name='provisioningrecord',
            constraint=models.UniqueConstraint(condition=models.Q(('cluster__isnull', True), ('project__isnull', False)), fields=('project',), name='provisioning_project_unique'),
        ),
        migrations.AddConstraint(
            model_name='provisioningrecord',
            constraint=models.UniqueConstraint(condition=models.Q(('cluster__isnull', False), ('project__isnull', True)), fields=('cluster',), name='provisioning_cluster_wide_unique'),
        ),
        migrations.AddConstraint(
            model_name='provisioningrecord',
            constraint=models.UniqueConstraint(condition=models.Q(('cluster__isnull', True), ('project__isnull', True)), fields=('scope',), name='provisioning_cluster_unique'),
        ),
    ]
