"""Stamps take their default from the portal's clock; a default lives in Python only, so
the tables stay as they are (on SQLite an AlterField would rebuild them under their triggers)."""

import portal.clock
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("scheduling", "0019_simulated_clock_to_portal"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="quotarequest",
                    name="requested_at",
                    field=models.DateTimeField(default=portal.clock.wall),
                ),
                migrations.AlterField(
                    model_name="reservation",
                    name="requested_at",
                    field=models.DateTimeField(default=portal.clock.wall),
                ),
                migrations.AlterField(
                    model_name="workload",
                    name="submitted_at",
                    field=models.DateTimeField(default=portal.clock.wall),
                ),
                migrations.AlterField(
                    model_name="workloadevent",
                    name="at",
                    field=models.DateTimeField(default=portal.clock.wall),
                ),
            ],
        ),
    ]
