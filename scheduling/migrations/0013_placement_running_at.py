from django.db import migrations, models


def running_since_the_workload_started(apps, schema_editor):
    """Placements of a workload that is running now ran from when it started (the one start
    the rows keep; earlier runs of a requeued workload left no trace to recover)."""
    Placement = apps.get_model("scheduling", "Placement")
    running = Placement.objects.filter(
        ended_at__isnull=True, workload__started_at__isnull=False
    ).select_related("workload")
    for placement in running:
        placement.running_at = max(placement.started_at, placement.workload.started_at)
        placement.save(update_fields=["running_at"])


class Migration(migrations.Migration):
    dependencies = [
        ("scheduling", "0012_reservation_mig_profile"),
    ]

    operations = [
        migrations.AddField(
            model_name="placement",
            name="running_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(running_since_the_workload_started, migrations.RunPython.noop),
    ]
