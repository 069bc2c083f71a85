from django.db import migrations, models
from django.db.models import F
from django.db.models.functions import Coalesce


def approved_increases_applied(apps, schema_editor):
    """Every increase approved so far grew its grant at its approval."""
    QuotaRequest = apps.get_model("scheduling", "QuotaRequest")
    decided = Coalesce(F("decided_at"), F("requested_at"))
    QuotaRequest.objects.filter(state__in=("approved", "reverted")).update(
        granted_from=decided, applied_at=decided
    )


class Migration(migrations.Migration):
    dependencies = [
        ("scheduling", "0015_scheduler_quota_standings"),
    ]

    operations = [
        migrations.AddField(
            model_name="quotarequest",
            name="applied_at",
            field=models.DateTimeField(blank=True, editable=False, null=True),
        ),
        migrations.AddField(
            model_name="quotarequest",
            name="granted_from",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(approved_increases_applied, migrations.RunPython.noop),
    ]
