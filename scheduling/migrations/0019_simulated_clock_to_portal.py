"""The simulated clock's offset now lives in the kernel (portal 0003 copied it)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("scheduling", "0018_cpu_node_pools"),
        ("portal", "0003_simulated_clock"),
    ]

    operations = [migrations.DeleteModel(name="SimulatedClock")]
