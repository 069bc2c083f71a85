"""Invoices name the month they invoice (one per organization and month, whatever its time
zone did since) and when their lines were last built."""

from datetime import timedelta
from importlib import import_module

import django.utils.timezone
from django.db import migrations, models
from django.db.models import Q

invoices = import_module("billing.migrations.0008_invoices")

FROZEN = "an issued invoice never changes: correct it with a credit note"
# As in 0013, with the month: of an issued invoice only its state (to paid or void) and their
# times may change.
CHANGED = (
    "NEW.organization_id {ne} OLD.organization_id OR NEW.month {ne} OLD.month"
    " OR NEW.period_start {ne} OLD.period_start"
    " OR NEW.period_end {ne} OLD.period_end OR NEW.number {ne} OLD.number"
    " OR NEW.subtotal {ne} OLD.subtotal OR NEW.credits {ne} OLD.credits"
    " OR NEW.tax_rate {ne} OLD.tax_rate OR NEW.tax {ne} OLD.tax OR NEW.total {ne} OLD.total"
    " OR NEW.currency {ne} OLD.currency OR NEW.corrects_id {ne} OLD.corrects_id"
    " OR NEW.state = 'draft'"
)
POSTGRESQL = f"""
    CREATE OR REPLACE FUNCTION billing_invoice_frozen() RETURNS trigger AS $$
    BEGIN
      IF TG_OP = 'DELETE' THEN
        IF OLD.state <> 'draft' THEN RAISE EXCEPTION '{FROZEN}'; END IF;
        RETURN OLD;
      END IF;
      IF OLD.state <> 'draft' AND ({CHANGED.format(ne="IS DISTINCT FROM")}) THEN
        RAISE EXCEPTION '{FROZEN}';
      END IF;
      RETURN NEW;
    END $$ LANGUAGE plpgsql
"""
SQLITE = (
    "CREATE TRIGGER billing_invoice_frozen BEFORE UPDATE ON billing_invoice"
    f" WHEN OLD.state <> 'draft' AND ({CHANGED.format(ne='IS NOT')})"
    f" BEGIN SELECT RAISE(ABORT, '{FROZEN}'); END"
)


def months_filled(apps, schema_editor):
    """A period starts within a day of its month's first day in any zone: its month is the
    UTC month 15 days on. A credit note's is its invoice's."""
    Invoice = apps.get_model("billing", "Invoice")
    for invoice in Invoice.objects.filter(corrects__isnull=True).iterator():
        middle = invoice.period_start + timedelta(days=15)
        invoice.month = middle.date().replace(day=1)
        invoice.updated_at = invoice.created_at
        invoice.save(update_fields=["month", "updated_at"])
    for note in Invoice.objects.filter(corrects__isnull=False).select_related("corrects"):
        note.month = note.corrects.month
        note.updated_at = note.created_at
        note.save(update_fields=["month", "updated_at"])


def sqlite_thawed(apps, schema_editor):
    """SQLite rebuilds the table to make the month required: its triggers (and the lines',
    which read it) go first, and come back after."""
    if schema_editor.connection.vendor == "sqlite":
        invoices.thaw_issued_invoices(apps, schema_editor)


def frozen_with_month(apps, schema_editor):
    """The database refuses to change an issued invoice (its month too) again."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRESQL)
    elif schema_editor.connection.vendor == "sqlite":
        for statement in (SQLITE, *invoices.SQLITE[1:]):
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("billing", "0015_catalog_constraint_messages"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="invoice", name="invoice_one_per_month"),
        migrations.AddField(
            model_name="invoice", name="month", field=models.DateField(null=True)
        ),
        migrations.AddField(
            model_name="invoice", name="updated_at", field=models.DateTimeField(null=True)
        ),
        migrations.RunPython(months_filled, migrations.RunPython.noop),
        migrations.RunPython(sqlite_thawed, migrations.RunPython.noop),
        migrations.AlterField(model_name="invoice", name="month", field=models.DateField()),
        migrations.AlterField(
            model_name="invoice",
            name="updated_at",
            field=models.DateTimeField(default=django.utils.timezone.now),
        ),
        migrations.RunPython(frozen_with_month, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="invoice",
            constraint=models.UniqueConstraint(
                condition=Q(corrects__isnull=True) & ~Q(state="void"),
                fields=("organization", "month"),
                name="invoice_one_per_month",
                violation_error_message="The organization already has an invoice for the month.",
            ),
        ),
    ]
