"""The simulated cluster's storage: the embedded default keeps the objects the portal applies
and the state it gives nodes in the database, so that the web process and the workers see the
same cluster (`scheduling.backends` hands it to the simulator). Every row carries the name of
the simulated cluster it belongs to, so that clusters with the same namespaces stay apart."""

from django.db import models


class SimulatedObject(models.Model):
    cluster = models.CharField(max_length=40)
    api_version = models.CharField(max_length=64)
    kind = models.CharField(max_length=64)
    namespace = models.CharField(max_length=63, blank=True)
    name = models.CharField(max_length=253)
    manifest = models.JSONField()
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "kind", "namespace", "name"], name="simulated_object_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


class SimulatedNodeState(models.Model):
    cluster = models.CharField(max_length=40)
    name = models.CharField(max_length=253)
    failed = models.BooleanField(default=False)
    labels = models.JSONField(default=dict, blank=True)
    taints = models.JSONField(default=list, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "name"], name="simulated_node_state_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.name}{' (failed)' if self.failed else ''}"


class SimulatedClusterState(models.Model):
    """Whether a simulated cluster answers: an operator switches it off to show the portal
    losing a cluster (and back on to show it return)."""

    cluster = models.CharField(max_length=40, unique=True)
    answering = models.BooleanField(default=True)

    def __str__(self) -> str:
        return f"{self.cluster}{'' if self.answering else ' (not answering)'}"
