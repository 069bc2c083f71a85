"""Leave a third of each page of the workload table free (PostgreSQL's fillfactor), so that the
cycle's updates of waiting workloads (queue position, estimated start, reason: no indexed
column) stay on their page as heap-only tuples instead of writing every index again."""

from django.db import migrations


def fillfactor(percent: int):
    def apply(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(f"ALTER TABLE scheduling_workload SET (fillfactor = {percent})")

    return apply


class Migration(migrations.Migration):
    dependencies = [("scheduling", "0004_launch_started_at")]

    operations = [migrations.RunPython(fillfactor(70), fillfactor(100))]
