"""Provisioning records per cluster (the schema): a project's records are one per cluster, and
the cluster-wide ones one per cluster; 0037 gives today's records to the clusters. The data
moves in a migration of its own: PostgreSQL refuses to build or drop an index in the
transaction that wrote the table's rows."""

import django.db.models.deletion
from django.db import migrations, models


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
