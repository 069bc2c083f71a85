"""Clusters: every pool belongs to one. A deployment with pools gets the cluster it had, named
`default`, from its settings (so it keeps working unchanged); the simulator's rows so far were
that cluster's."""

import django.core.validators
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

import tenants.models

DEFAULT_CLUSTER_NAME = "default"


def default_cluster_create(apps, schema_editor):
    NodePool = apps.get_model("scheduling", "NodePool")
    Cluster = apps.get_model("scheduling", "Cluster")
    if not NodePool.objects.exists():
        return
    cluster, _ = Cluster.objects.get_or_create(
        name=DEFAULT_CLUSTER_NAME,
        defaults={"region": DEFAULT_CLUSTER_NAME, "backend": settings.PORTAL_CLUSTER},
    )
    NodePool.objects.update(cluster=cluster)


class Migration(migrations.Migration):
    dependencies = [
        ("scheduling", "0028_tier_lost_work_credited"),
    ]

    operations = [
        migrations.CreateModel(
            name="Cluster",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("name", models.CharField(max_length=40, unique=True, validators=[tenants.models.slug_validator])),
                ("region", models.CharField(max_length=40, validators=[tenants.models.slug_validator])),
                ("backend", models.CharField(choices=[("simulated", "Simulated"), ("kubernetes", "Kubernetes")], max_length=16)),
                ("kubeconfig", models.CharField(blank=True, help_text="Kubernetes: env:VARIABLE naming the kubeconfig file, or its mounted path; empty: the in-cluster service account (or the process's KUBECONFIG).", max_length=255, validators=[django.core.validators.RegexValidator("^(env:[A-Za-z_][A-Za-z0-9_]*|/\\S+)$", "Give env:VARIABLE (naming the file) or the absolute path of a mounted kubeconfig file.")])),
                ("simulated_path", models.CharField(blank=True, help_text="Simulated: the cluster description file; empty: PORTAL_SIMULATED_CLUSTER.", max_length=255)),
                ("state", models.CharField(choices=[("ready", "Ready"), ("unreachable", "Unreachable")], default="ready", max_length=16)),
                ("last_seen_at", models.DateTimeField(blank=True, null=True)),
            ],
            options={"ordering": ["name"]},
        ),
        migrations.AddField(
            model_name="nodepool",
            name="cluster",
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name="pools", to="scheduling.cluster"),
        ),
        migrations.RunPython(default_cluster_create, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="nodepool",
            name="cluster",
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="pools", to="scheduling.cluster"),
        ),
        migrations.RemoveConstraint(model_name="simulatedobject", name="simulated_object_unique"),
        migrations.AddField(
            model_name="simulatedobject",
            name="cluster",
            field=models.CharField(default=DEFAULT_CLUSTER_NAME, max_length=40),
            preserve_default=False,
        ),
        migrations.AddConstraint(
            model_name="simulatedobject",
            constraint=models.UniqueConstraint(fields=("cluster", "kind", "namespace", "name"), name="simulated_object_unique"),
        ),
        migrations.AddField(
            model_name="simulatednodestate",
            name="cluster",
            field=models.CharField(default=DEFAULT_CLUSTER_NAME, max_length=40),
            preserve_default=False,
        ),
        migrations.AlterField(
            model_name="simulatednodestate",
            name="name",
            field=models.CharField(max_length=253),
        ),
        migrations.AddConstraint(
            model_name="simulatednodestate",
            constraint=models.UniqueConstraint(fields=("cluster", "name"), name="simulated_node_state_unique"),
        ),
    ]
