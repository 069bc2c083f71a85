"""Stamps take their default from the portal's clock; a default lives in Python only, so
the tables stay as they are (on SQLite an AlterField would rebuild them under their triggers)."""

import portal.clock
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("tenants", "0004_organization_weight_message"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="apitoken",
                    name="created_at",
                    field=models.DateTimeField(default=portal.clock.wall),
                ),
                migrations.AlterField(
                    model_name="auditevent",
                    name="at",
                    field=models.DateTimeField(db_index=True, default=portal.clock.wall),
                ),
                migrations.AlterField(
                    model_name="invitation",
                    name="created_at",
                    field=models.DateTimeField(default=portal.clock.wall),
                ),
                migrations.AlterField(
                    model_name="membership",
                    name="created_at",
                    field=models.DateTimeField(default=portal.clock.wall),
                ),
                migrations.AlterField(
                    model_name="organization",
                    name="created_at",
                    field=models.DateTimeField(default=portal.clock.wall),
                ),
                migrations.AlterField(
                    model_name="project",
                    name="created_at",
                    field=models.DateTimeField(default=portal.clock.wall),
                ),
            ],
        ),
    ]
