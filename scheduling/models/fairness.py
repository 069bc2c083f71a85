"""Each organization's decayed GPU usage of work that ended (scheduling.engine.fairness)."""

from django.db import models

from tenants.models import Organization


class TenantUsage(models.Model):
    """Decayed, class-weighted GPU-seconds of an organization's ended placements, as of
    ``as_of``: the cycle moves it on and adds each placement once it ended (``Placement.
    usage_counted``), so it never reads the whole history."""

    organization = models.OneToOneField(
        Organization, on_delete=models.CASCADE, primary_key=True, related_name="decayed_usage"
    )
    gpu_seconds = models.FloatField(default=0)
    as_of = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.organization}: {self.gpu_seconds:.0f} decayed GPU-seconds"


class FairShareStanding(Organization):
    """An organization as operators see it in fair share (admin's screen of decayed usage,
    weight and share): the organization itself, no table of its own."""

    class Meta:
        proxy = True
        verbose_name = "fair-share standing"
        ordering = ["slug"]
