"""What the portal's background work leaves for operators: whether the cluster holds what a
project needs (provisioning) and the scheduling cycle's last figures."""

from django.db import models
from django.db.models import Q

from tenants.models import Project

from .inventory import Cluster


class ProvisioningRecord(models.Model):
    """Whether one cluster holds what the portal wants for a project, or (no project) what it
    wants cluster-wide (priority classes, node labels). One per project and cluster, and one
    per cluster for the cluster-wide objects: one cluster's failure is not another's success.
    No cluster: provisioning through the settings' backend, before the inventory named any
    (it drives every cluster it knows)."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"
        REMOVED = "removed", "Removed"

    project = models.ForeignKey(
        Project,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="provisioning_records",
    )
    cluster = models.ForeignKey(
        Cluster,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="provisioning_records",
    )
    # "project", or "cluster" for the cluster-wide record (no project).
    scope = models.CharField(max_length=16, default="project")
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    error = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)
    provisioned_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["project_id", "cluster__name"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "cluster"],
                condition=Q(project__isnull=False, cluster__isnull=False),
                name="provisioning_project_cluster_unique",
            ),
            models.UniqueConstraint(
                fields=["project"],
                condition=Q(project__isnull=False, cluster__isnull=True),
                name="provisioning_project_unique",
            ),
            models.UniqueConstraint(
                fields=["cluster"],
                condition=Q(project__isnull=True, cluster__isnull=False),
                name="provisioning_cluster_wide_unique",
            ),
            models.UniqueConstraint(
                fields=["scope"],
                condition=Q(project__isnull=True, cluster__isnull=True),
                name="provisioning_cluster_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project or 'cluster-wide'} in {self.where}: {self.state}"

    @property
    def where(self) -> str:
        """The cluster's name, as users and operators read it."""
        return self.cluster.name if self.cluster_id else "every cluster"


class SchedulerState(models.Model):
    """The one row the scheduling cycle writes first (it serialises cycles on SQLite, where
    there are no advisory locks) and its last figures, for operators."""

    last_cycle_at = models.DateTimeField(null=True, blank=True)
    # Since when a cycle waits in the queue (None: none does); further requests fold into it.
    cycle_requested_at = models.DateTimeField(null=True, blank=True)
    last_cycle_ms = models.FloatField(default=0)
    last_admitted = models.PositiveIntegerField(default=0)
    last_preempted = models.PositiveIntegerField(default=0)
    last_pending = models.PositiveIntegerField(default=0)
    # What each organization borrows and could still borrow, per quota resource, as the last
    # cycle left it: {tenant: {resource: [borrowed, borrowable]}}. Pages read it rather than
    # build the engine's ledger over the whole cluster on every load.
    quota_standings = models.JSONField(default=dict)
    # When a cycle last wrote every waiting workload's queue position and start estimate that
    # had moved; the cycles in between write only new reasons and first estimates, so a
    # place is at most PORTAL_PLACES_REFRESH_SECONDS old.
    places_written_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"last cycle {self.last_cycle_at}: {self.last_cycle_ms:.0f} ms"


class CycleEndState(models.Model):
    """The one row of what the last cycle left for what-ifs: `engine.CycleEnd` pickled (the
    engine's own dataclasses; only the cycle writes it), kept apart from SchedulerState so
    that reading the cycle's figures never loads it."""

    decided_at = models.DateTimeField()
    # The cluster it was decided on (see `services.what_if_state`): another means it changed.
    fingerprint = models.CharField(max_length=100)
    state = models.BinaryField()

    def __str__(self) -> str:
        return f"cycle end state of {self.decided_at}"
