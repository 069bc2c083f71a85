"""Stamps take their default from the portal's clock; a default lives in Python only, so
the tables stay as they are (on SQLite an AlterField would rebuild them under their triggers)."""

import portal.clock
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("billing", "0016_invoice_month"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="budget",
                    name="updated_at",
                    field=models.DateTimeField(default=portal.clock.wall),
                ),
                migrations.AlterField(
                    model_name="budgetalert",
                    name="created_at",
                    field=models.DateTimeField(default=portal.clock.wall),
                ),
                migrations.AlterField(
                    model_name="cancellationcharge",
                    name="created_at",
                    field=models.DateTimeField(default=portal.clock.wall),
                ),
                migrations.AlterField(
                    model_name="catalogitem",
                    name="active_from",
                    field=models.DateTimeField(default=portal.clock.wall),
                ),
                migrations.AlterField(
                    model_name="credit",
                    name="granted_at",
                    field=models.DateTimeField(default=portal.clock.wall),
                ),
                migrations.AlterField(
                    model_name="invoice",
                    name="created_at",
                    field=models.DateTimeField(default=portal.clock.wall),
                ),
                migrations.AlterField(
                    model_name="invoice",
                    name="updated_at",
                    field=models.DateTimeField(default=portal.clock.wall),
                ),
                migrations.AlterField(
                    model_name="order",
                    name="created_at",
                    field=models.DateTimeField(default=portal.clock.wall),
                ),
                migrations.AlterField(
                    model_name="priceversion",
                    name="created_at",
                    field=models.DateTimeField(default=portal.clock.wall),
                ),
                migrations.AlterField(
                    model_name="usagereconciliation",
                    name="ran_at",
                    field=models.DateTimeField(default=portal.clock.wall),
                ),
            ],
        ),
    ]
