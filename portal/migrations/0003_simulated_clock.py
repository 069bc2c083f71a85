"""The simulated clock's offset moves from scheduling into the kernel with the clock itself."""

from django.db import migrations, models


def offset_copy(apps, schema_editor):
    old = apps.get_model("scheduling", "SimulatedClock")
    new = apps.get_model("portal", "SimulatedClock")
    for row in old.objects.all():
        new.objects.create(pk=row.pk, offset_seconds=row.offset_seconds)


class Migration(migrations.Migration):
    dependencies = [
        ("portal", "0002_worker_heartbeat"),
        ("scheduling", "0018_cpu_node_pools"),
    ]

    operations = [
        migrations.CreateModel(
            name="SimulatedClock",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("offset_seconds", models.FloatField(default=0)),
            ],
        ),
        migrations.RunPython(offset_copy, migrations.RunPython.noop),
    ]
