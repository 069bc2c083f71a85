"""Workloads, where their replicas run (placements) and their timeline (events)."""

import uuid

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from portal import clock
from tenants.models import Project, slug_validator

from .inventory import GpuClass, Node, PriorityTier
from .validators import IMAGE_MAX, env_validator, image_reference_validator, mig_profile_validator


class Workload(models.Model):
    class Kind(models.TextChoices):
        TRAINING = "training", "Training"
        FINE_TUNING = "fine-tuning", "Fine-tuning"
        BATCH_INFERENCE = "batch-inference", "Batch inference"
        INFERENCE = "inference", "Inference service"
        NOTEBOOK = "notebook", "Notebook"

    class State(models.TextChoices):
        PENDING = "Pending"
        ADMITTED = "Admitted"
        RUNNING = "Running"
        SUCCEEDED = "Succeeded"
        FAILED = "Failed"
        PREEMPTED = "Preempted"
        CANCELLED = "Cancelled"
        EXPIRED = "Expired"

    ACTIVE_STATES = (State.ADMITTED, State.RUNNING)
    FINAL_STATES = (State.SUCCEEDED, State.FAILED, State.PREEMPTED, State.CANCELLED, State.EXPIRED)
    # Kinds that run on GPUs: a submission of one of them must ask for some.
    GPU_KINDS = (Kind.TRAINING, Kind.FINE_TUNING, Kind.BATCH_INFERENCE, Kind.INFERENCE)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="workloads")
    name = models.CharField(max_length=40, validators=[slug_validator])
    kind = models.CharField(max_length=20, choices=Kind.choices)
    tier = models.ForeignKey(PriorityTier, on_delete=models.PROTECT, related_name="workloads")
    # Acceptable GPU classes in order of preference; the engine takes the first that fits.
    gpu_classes = models.JSONField(default=list, blank=True)
    gpus = models.PositiveSmallIntegerField(default=0)
    gpu_milli = models.PositiveSmallIntegerField(default=0, validators=[MaxValueValidator(999)])
    mig_profile = models.CharField(max_length=20, blank=True, validators=[mig_profile_validator])
    mig_count = models.PositiveSmallIntegerField(default=0)
    replicas = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1)])
    min_replicas = models.PositiveSmallIntegerField(null=True, blank=True)
    cpu_milli = models.PositiveIntegerField(default=1000)
    memory_mib = models.PositiveIntegerField(default=4096)
    required_topology = models.CharField(max_length=63, blank=True)
    # The region it must run in (a Cluster's region); empty: wherever the scheduler chooses.
    region = models.CharField(max_length=40, blank=True)
    image = models.CharField(max_length=IMAGE_MAX, validators=[image_reference_validator])
    command = models.JSONField(default=list, blank=True)
    env = models.JSONField(default=dict, blank=True, validators=[env_validator])
    max_runtime = models.DurationField(null=True, blank=True)

    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    status_reason = models.CharField(max_length=500, blank=True)
    preemptible = models.BooleanField(default=True)
    submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="workloads"
    )
    submitted_at = models.DateTimeField(default=clock.wall)
    admitted_at = models.DateTimeField(null=True, blank=True)
    # When a launch task last started on it: the reconciler's grace for a lost launch counts
    # from here, not from the admission, so launches queued behind a burst are not redone.
    launch_started_at = models.DateTimeField(null=True, blank=True)
    launched_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    gpu_class = models.ForeignKey(
        GpuClass, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    borrowed = models.BooleanField(default=False)
    # Why it waits, from the last scheduling cycle.
    pending_code = models.CharField(max_length=32, blank=True)
    pending_message = models.CharField(max_length=500, blank=True)
    queue_position = models.PositiveIntegerField(null=True, blank=True)
    # The most likely start and the 80% interval around it (high None: no upper bound known).
    estimated_start = models.DateTimeField(null=True, blank=True)
    estimated_start_low = models.DateTimeField(null=True, blank=True)
    estimated_start_high = models.DateTimeField(null=True, blank=True)
    # The first estimate it got in the queue, kept with its actual start (its first admission)
    # to show operators how good the estimates are.
    first_estimate_at = models.DateTimeField(null=True, blank=True)
    first_estimate = models.DateTimeField(null=True, blank=True)
    first_estimate_low = models.DateTimeField(null=True, blank=True)
    first_estimate_high = models.DateTimeField(null=True, blank=True)
    # How far its interval was stretched (engine.interval_scale): undone to judge the draws.
    first_estimate_scale = models.FloatField(default=1.0)
    first_estimate_actual = models.DateTimeField(null=True, blank=True)
    idle_since = models.DateTimeField(null=True, blank=True)
    idle_warned_at = models.DateTimeField(null=True, blank=True)
    # Its GPUs as monitoring last saw them while it ran (0-1; None: unknown), for the
    # operators' insights.
    gpu_utilization = models.FloatField(null=True, blank=True)
    gpu_memory_used = models.FloatField(null=True, blank=True)
    gpu_seen_at = models.DateTimeField(null=True, blank=True)
    preempted_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="victims"
    )
    # An evicted workload goes back to the queue (keeping its submit time) unless its submitter
    # opted out or it was evicted PORTAL_EVICTIONS_MAX times; not placed before the backoff ends.
    requeue_on_eviction = models.BooleanField(default=True)
    evictions = models.PositiveIntegerField(default=0)
    requeue_not_before = models.DateTimeField(null=True, blank=True)
    # Checkpoints: declared at submission (every interval since it started) and/or reported as
    # it runs; evicted, it loses only the work since the last one, so the engine prefers it.
    checkpoint_interval = models.DurationField(null=True, blank=True)
    last_checkpoint_at = models.DateTimeField(null=True, blank=True)
    # When its Kubernetes objects were deleted (None while they may exist).
    objects_deleted_at = models.DateTimeField(null=True, blank=True)
    # Since when its objects must go (it ended or was requeued) and were not yet deleted: the
    # reconciler deletes them if the task that should have is lost.
    teardown_due_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-submitted_at"]
        indexes = [
            models.Index(fields=["state", "submitted_at"], name="workload_state_submitted"),
            # The run times the start estimates draw from: the latest finished work.
            models.Index(fields=["finished_at"], name="workload_finished"),
            # The estimates' calibration over a period of actual starts.
            models.Index(fields=["first_estimate_actual"], name="workload_estimate_actual"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="workload_name_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.project}/{self.name}"

    @property
    def object_name(self) -> str:
        """The Kubernetes objects' name: the workload's name, unique in its namespace."""
        return self.name

    @property
    def is_final(self) -> bool:
        return self.state in self.FINAL_STATES

    @property
    def is_active(self) -> bool:
        """Admitted or running: it holds GPUs."""
        return self.state in self.ACTIVE_STATES

    @property
    def needs_gpu(self) -> bool:
        """It asks for whole GPUs, a GPU share or MIG instances; otherwise it is CPU-only."""
        return bool(self.gpus or self.gpu_milli or self.mig_count)

    @property
    def expected_end(self):
        if self.started_at and self.max_runtime:
            return self.started_at + self.max_runtime
        return None


class Placement(models.Model):
    """One replica of a workload on one node, from admission until it releases its GPUs."""

    workload = models.ForeignKey(Workload, on_delete=models.CASCADE, related_name="placements")
    replica = models.PositiveSmallIntegerField()
    node = models.ForeignKey(Node, on_delete=models.PROTECT, related_name="placements")
    gpu_indices = models.JSONField(default=list, blank=True)
    gpu_milli = models.PositiveSmallIntegerField(default=0)
    mig_profile = models.CharField(max_length=20, blank=True)
    mig_count = models.PositiveSmallIntegerField(default=0)
    cpu_milli = models.PositiveIntegerField(default=0)
    memory_mib = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField()
    # When the cluster first reported it running: what metering counts from (None: it never
    # ran, and costs nothing).
    running_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    # Added to its organization's decayed usage (TenantUsage) once it ended.
    usage_counted = models.BooleanField(default=False)

    class Meta:
        ordering = ["workload", "replica"]
        indexes = [
            models.Index(
                fields=["node"], condition=Q(ended_at__isnull=True), name="placement_active_node"
            ),
            models.Index(
                fields=["ended_at"],
                condition=Q(ended_at__isnull=False, usage_counted=False),
                name="placement_usage_uncounted",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.workload} #{self.replica} on {self.node}"


class WorkloadEvent(models.Model):
    workload = models.ForeignKey(Workload, on_delete=models.CASCADE, related_name="events")
    at = models.DateTimeField(default=clock.wall)
    kind = models.CharField(max_length=32)
    message = models.CharField(max_length=500)
    data = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.at:%H:%M:%S} {self.kind}: {self.message}"


class WorkloadLogTail(models.Model):
    """The last lines of one replica's log, kept when the portal deletes the workload's cluster
    objects (the cluster deletes their logs with them), so that its logs outlive them."""

    workload = models.ForeignKey(Workload, on_delete=models.CASCADE, related_name="log_tails")
    replica = models.PositiveSmallIntegerField()
    # [[ISO 8601 time, text], ...], oldest first, at most PORTAL_LOGS_KEPT_LINES lines and
    # PORTAL_LOGS_KEPT_BYTES bytes of text.
    lines = models.JSONField(default=list, blank=True)
    # The log was longer than what was kept: its beginning is lost.
    truncated = models.BooleanField(default=False)
    captured_at = models.DateTimeField()
    # Why nothing was kept: the cluster's error when the log was read (empty: it was read).
    failure = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["workload", "replica"]
        constraints = [
            models.UniqueConstraint(fields=["workload", "replica"], name="log_tail_per_replica")
        ]

    def __str__(self) -> str:
        return f"{self.workload} #{self.replica}: {len(self.lines)} lines kept"


class Eviction(models.Model):
    """One eviction of a workload, with what the preemption contract gave it and what it lost:
    the record credits for lost work are computed from. ``lost_since`` is its last checkpoint
    (reported, or derived from its declared interval) or, without one, when it started; its
    ``resource_seconds_lost`` count, as metering does, the resource's unit (whole GPUs,
    milli-GPU of a share, MIG instances) times the seconds each replica ran since then."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workload = models.ForeignKey(Workload, on_delete=models.CASCADE, related_name="eviction_log")
    at = models.DateTimeField()
    reason = models.CharField(max_length=32)
    preempted_by = models.ForeignKey(
        Workload, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    notice_seconds = models.PositiveIntegerField()
    gpu_class = models.ForeignKey(
        GpuClass, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    mig_profile = models.CharField(max_length=20, blank=True)
    lost_since = models.DateTimeField(null=True, blank=True)
    resource_seconds_lost = models.PositiveBigIntegerField(default=0)
    gpu_seconds_lost = models.DecimalField(max_digits=18, decimal_places=3, default=0)
    requeued = models.BooleanField()

    class Meta:
        ordering = ["at", "id"]
        indexes = [models.Index(fields=["at"], name="eviction_at")]

    def __str__(self) -> str:
        return f"{self.workload} evicted at {self.at:%Y-%m-%d %H:%M:%S}"
