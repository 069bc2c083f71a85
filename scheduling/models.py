"""GPU inventory, quotas, priority tiers and workloads, with their placements and timeline."""

import re
import uuid
from datetime import datetime

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q
from django.utils.deconstruct import deconstructible

from portal import clock
from tenants.models import Organization, Project, slug_validator

from .engine.model import quota_resource
from .engine.quota import resource_label

# Patterns anchor with \A and \Z: "$" would also match before a trailing newline.
gpu_class_name_validator = RegexValidator(
    r"\A[A-Za-z0-9][A-Za-z0-9.-]{0,39}\Z",
    "Letters, digits, dots and hyphens, e.g. H100-80GB.",
)
mig_profile_validator = RegexValidator(
    r"\Amig-[1-7]g\.[0-9]+gb\Z", "A MIG profile, e.g. mig-1g.10gb."
)

# An OCI image reference, [registry[:port]/]path[:tag][@digest], by the grammar of the
# distribution project's reference package (github.com/distribution/reference, regexp.go);
# its name part (registry and path) has at most 255 characters.
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_NAME = rf"(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
IMAGE_NAME_MAX = 255
IMAGE_MAX = 500


@deconstructible
class ImageReferenceValidator(RegexValidator):
    regex = rf"\A({_NAME})(?::{_TAG})?(?:@{_DIGEST})?\Z"
    message = "Not an OCI image reference, e.g. nvcr.io/nvidia/pytorch:25.01-py3."
    code = "invalid_image"

    def __call__(self, value):
        super().__call__(value)
        if len(self.regex.match(str(value)).group(1)) > IMAGE_NAME_MAX:
            raise ValidationError(
                f"The image name (registry and path) exceeds {IMAGE_NAME_MAX} characters.",
                code=self.code,
            )


image_reference_validator = ImageReferenceValidator()

# A workload's environment: C identifiers for names, and a bound on how much it carries.
ENV_NAME_PATTERN = r"\A[A-Za-z_][A-Za-z0-9_]*\Z"
ENV_NAME_MAX = 256
ENV_VALUE_MAX = 4096
ENV_MAX_VARIABLES = 128
ENV_MAX_BYTES = 64 * 1024


def env_validator(env) -> None:
    """Names that are C identifiers; at most ENV_MAX_VARIABLES variables, values of at most
    ENV_VALUE_MAX characters, ENV_MAX_BYTES in all (names and values in UTF-8)."""
    if not isinstance(env, dict) or not all(isinstance(value, str) for value in env.values()):
        raise ValidationError("A mapping of variable names to strings.", code="invalid_env")
    bad = [n for n in env if len(n) > ENV_NAME_MAX or not re.match(ENV_NAME_PATTERN, n)][:3]
    if bad:
        shown = ", ".join(repr(name[:40]) for name in bad)
        raise ValidationError(
            f"Not environment variable names (letters, digits and _, not a digit first, at most"
            f" {ENV_NAME_MAX}): {shown}.",
            code="invalid_env",
        )
    long = [name for name, value in env.items() if len(value) > ENV_VALUE_MAX][:3]
    if long:
        raise ValidationError(
            f"Values longer than {ENV_VALUE_MAX} characters: {', '.join(long)}.",
            code="invalid_env",
        )
    if len(env) > ENV_MAX_VARIABLES:
        raise ValidationError(
            f"{len(env)} variables; at most {ENV_MAX_VARIABLES}.", code="invalid_env"
        )
    size = sum(len(name.encode()) + len(value.encode()) for name, value in env.items())
    if size > ENV_MAX_BYTES:
        raise ValidationError(
            f"{size} bytes of names and values; at most {ENV_MAX_BYTES}.", code="invalid_env"
        )


class GpuClass(models.Model):
    """A kind of GPU as the portal sells it; maps the product names drivers report."""

    name = models.CharField(max_length=40, unique=True, validators=[gpu_class_name_validator])
    memory_gib = models.PositiveIntegerField()
    # The `nvidia.com/gpu.product` values of GPU Feature Discovery that are this class:
    # driver versions name the same card differently, so operators keep this list.
    products = models.JSONField(default=list, blank=True)
    mig_profiles = models.JSONField(default=list, blank=True)
    resource_name = models.CharField(max_length=100, default="nvidia.com/gpu")
    # Time-sliced sharing exposes a separate resource (device plugin `renameByDefault`).
    shared_resource_name = models.CharField(max_length=100, default="nvidia.com/gpu.shared")

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "GPU classes"

    def __str__(self) -> str:
        return self.name


class NodePool(models.Model):
    class Purpose(models.TextChoices):
        TRAINING = "training", "Training"
        INFERENCE = "inference", "Inference"
        DEV = "dev", "Development"

    name = models.CharField(max_length=40, unique=True, validators=[slug_validator])
    # None: a CPU pool, whose untainted nodes have no GPUs and run CPU-only work.
    gpu_class = models.ForeignKey(
        GpuClass, null=True, blank=True, on_delete=models.PROTECT, related_name="pools"
    )
    purpose = models.CharField(max_length=16, choices=Purpose.choices)
    labels = models.JSONField(default=dict, blank=True)
    taint_key = models.CharField(max_length=100, default="nvidia.com/gpu", blank=True)
    taint_value = models.CharField(max_length=63, default="present", blank=True)
    taint_effect = models.CharField(
        max_length=20,
        default="NoSchedule",
        choices=[(e, e) for e in ("NoSchedule", "PreferNoSchedule", "NoExecute")],
    )
    # Topology label keys of the pool's nodes, narrowest first (e.g. nvlink-domain, rack, block).
    topology_keys = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def gpu_class_name(self) -> str:
        """Its GPU class's name; empty for a CPU pool."""
        return self.gpu_class.name if self.gpu_class_id else ""


class Node(models.Model):
    name = models.CharField(max_length=253, unique=True)
    pool = models.ForeignKey(NodePool, on_delete=models.PROTECT, related_name="nodes")
    gpu_count = models.PositiveSmallIntegerField(help_text="Whole GPUs (not split by MIG).")
    mig_layout = models.JSONField(default=dict, blank=True, help_text="MIG instances by profile.")
    cpu_milli = models.PositiveIntegerField()
    memory_mib = models.PositiveBigIntegerField()
    topology = models.JSONField(default=dict, blank=True)
    labels = models.JSONField(default=dict, blank=True)
    cordoned = models.BooleanField(default=False)
    ready = models.BooleanField(default=True)
    last_seen_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["pool__name", "name"]

    def __str__(self) -> str:
        return self.name


class PriorityTier(models.Model):
    name = models.CharField(max_length=40, unique=True, validators=[slug_validator])
    value = models.IntegerField(unique=True, help_text="Higher runs first.")
    preemptible = models.BooleanField(default=True)
    description = models.CharField(max_length=200, blank=True)
    idle_warn_after = models.DurationField(null=True, blank=True)
    idle_stop_after = models.DurationField(null=True, blank=True)

    class Meta:
        ordering = ["-value"]

    def __str__(self) -> str:
        return self.name


class QuotaGrant(models.Model):
    """A quota of one GPU class for an organization, or for one of its projects: of its whole
    GPUs, of its GPU shares (in milli-GPU) or of one MIG profile (in instances), the resources
    the namespace's ResourceQuota counts."""

    class Resource(models.TextChoices):
        GPUS = "gpus", "Whole GPUs"
        SHARED = "shared", "GPU shares (milli-GPU)"
        MIG = "mig", "MIG instances of one profile"

    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="quota_grants"
    )
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="quota_grants"
    )
    gpu_class = models.ForeignKey(GpuClass, on_delete=models.PROTECT, related_name="quota_grants")
    resource = models.CharField(max_length=8, choices=Resource.choices, default=Resource.GPUS)
    mig_profile = models.CharField(
        max_length=20, blank=True, validators=[mig_profile_validator], help_text="MIG only."
    )
    guarantee = models.PositiveIntegerField(
        help_text="Always available to the tenant: GPUs, milli-GPU or MIG instances."
    )
    limit = models.PositiveIntegerField(help_text="Guarantee plus what may be borrowed.")
    cohort = models.CharField(max_length=40, blank=True, help_text="Tenants that lend each other.")

    class Meta:
        ordering = ["organization__slug", "gpu_class__name", "resource", "mig_profile"]
        constraints = [
            models.CheckConstraint(
                condition=Q(limit__gte=models.F("guarantee")),
                name="quota_limit_ge_guarantee",
                violation_error_message="The limit cannot be below the guarantee: the limit is"
                " the guarantee plus what may be borrowed.",
            ),
            models.CheckConstraint(
                condition=Q(resource="mig", mig_profile__gt="")
                | (~Q(resource="mig") & Q(mig_profile="")),
                name="quota_mig_names_a_profile",
                violation_error_message="A MIG quota names its MIG profile, and only a MIG quota"
                " names one.",
            ),
            models.UniqueConstraint(
                fields=["organization", "gpu_class", "resource", "mig_profile"],
                condition=Q(project__isnull=True),
                name="quota_organization_resource_unique",
                violation_error_message="The organization already has a quota of this GPU class"
                " and resource: change that one.",
            ),
            models.UniqueConstraint(
                fields=["project", "gpu_class", "resource", "mig_profile"],
                condition=Q(project__isnull=False),
                name="quota_project_resource_unique",
                violation_error_message="The project already has a quota of this GPU class and"
                " resource: change that one.",
            ),
        ]

    def __str__(self) -> str:
        scope = (
            f"{self.organization.slug}/{self.project.slug}"
            if self.project_id
            else self.organization.slug
        )
        return f"{scope} {self.resource_label}: {self.guarantee}/{self.limit}"

    @property
    def engine_resource(self) -> str:
        """The key the engine counts this quota by (``engine.model.quota_resource``)."""
        return quota_resource(
            self.gpu_class.name,
            mig_profile=self.mig_profile or None,
            shared=self.resource == self.Resource.SHARED,
        )

    @property
    def usage_scope(self) -> str | None:
        """The project whose work counts against it (None: the whole organization's)."""
        return self.project.slug if self.project_id else None

    @property
    def resource_label(self) -> str:
        """ "H100-80GB", "H100-80GB shares" or "H100-80GB mig-1g.10gb", as the engine says."""
        return resource_label(self.engine_resource)

    @property
    def unit(self) -> str:
        return {"gpus": "GPUs", "shared": "milli-GPU", "mig": "instances"}[self.resource]

    def clean(self) -> None:
        super().clean()
        if self.resource == self.Resource.MIG:
            profiles = self.gpu_class.mig_profiles if self.gpu_class_id else []
            if self.mig_profile not in profiles:
                raise ValidationError(
                    {"mig_profile": f"One of the class's MIG profiles: {', '.join(profiles)}."}
                )
        elif self.mig_profile:
            raise ValidationError({"mig_profile": "Only a MIG quota names a profile."})


class QuotaRequest(models.Model):
    """An owner's or admin's ask for more of a quota resource: ``amount`` more guaranteed
    (and allowed) GPUs, milli-GPU or MIG instances, until ``until`` or for good. An operator
    approves it (possibly less, or to another date), denies it with a reason, or lets it
    expire; an approved temporary increase reverts at its end."""

    class State(models.TextChoices):
        REQUESTED = "requested", "Requested"
        APPROVED = "approved", "Approved"
        DENIED = "denied", "Denied"
        EXPIRED = "expired", "Expired"
        REVERTED = "reverted", "Ended (reverted)"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="quota_requests"
    )
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="quota_requests"
    )
    gpu_class = models.ForeignKey(GpuClass, on_delete=models.PROTECT, related_name="+")
    resource = models.CharField(
        max_length=8, choices=QuotaGrant.Resource.choices, default=QuotaGrant.Resource.GPUS
    )
    mig_profile = models.CharField(max_length=20, blank=True, validators=[mig_profile_validator])
    amount = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    reason = models.CharField(max_length=1000)
    until = models.DateTimeField(null=True, blank=True, help_text="Empty: for good.")
    state = models.CharField(max_length=10, choices=State.choices, default=State.REQUESTED)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    requested_at = models.DateTimeField(default=clock.wall)
    # What the operator granted: the amount and end date may differ from the ask.
    granted_amount = models.PositiveIntegerField(null=True, blank=True)
    granted_until = models.DateTimeField(null=True, blank=True)
    # When the increase starts to count (a quota package's period starts after its approval),
    # and when its grant grew: the scheduling cycle grows the grant at the start, takes the
    # increase back at ``granted_until``.
    granted_from = models.DateTimeField(null=True, blank=True)
    applied_at = models.DateTimeField(null=True, blank=True, editable=False)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_reason = models.CharField(max_length=500, blank=True)
    grant = models.ForeignKey(
        QuotaGrant, null=True, blank=True, on_delete=models.SET_NULL, related_name="requests"
    )

    class Meta:
        ordering = ["-requested_at"]
        constraints = [
            models.CheckConstraint(condition=Q(amount__gte=1), name="quota_request_amount_positive")
        ]

    def __str__(self) -> str:
        return f"{self.organization.slug}: +{self.amount} {self.gpu_class} {self.resource}"

    @property
    def unit(self) -> str:
        return QuotaGrant(resource=self.resource).unit


class ReservationRule(models.Model):
    """An organization's reservations within these bounds are approved without an operator."""

    organization = models.OneToOneField(
        Organization, on_delete=models.CASCADE, related_name="reservation_rule"
    )
    max_gpus = models.PositiveIntegerField(help_text="At most this many GPUs a window.")
    max_hours = models.PositiveIntegerField(help_text="At most this long a window.")

    def __str__(self) -> str:
        return f"{self.organization.slug}: up to {self.max_gpus} GPUs for {self.max_hours} h"

    def allows(self, *, gpus: int, hours: float) -> bool:
        return gpus <= self.max_gpus and hours <= self.max_hours


class Reservation(models.Model):
    """Whole GPUs of one class in one pool held for an organization (or one of its projects)
    over a window of time. Requested, approved and active reservations hold their GPUs: the
    sum over any instant never exceeds the pool's capacity."""

    class State(models.TextChoices):
        REQUESTED = "requested", "Requested"
        APPROVED = "approved", "Approved"
        ACTIVE = "active", "Active"
        COMPLETED = "completed", "Completed"
        REJECTED = "rejected", "Rejected"
        CANCELLED = "cancelled", "Cancelled"
        EXPIRED = "expired", "Expired"

    HOLDING_STATES = (State.REQUESTED, State.APPROVED, State.ACTIVE)
    # What the engine sees: approved windows (upcoming or open) and active ones.
    SCHEDULED_STATES = (State.APPROVED, State.ACTIVE)
    # Whose windows are charged as they pass (a cancelled one only up to its cancellation).
    BILLED_STATES = (State.APPROVED, State.ACTIVE, State.COMPLETED)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="reservations"
    )
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="reservations"
    )
    gpu_class = models.ForeignKey(GpuClass, on_delete=models.PROTECT, related_name="+")
    pool = models.ForeignKey(NodePool, on_delete=models.PROTECT, related_name="reservations")
    # Whole GPUs, or with ``mig_profile`` instances of that profile (a node's MIG instances
    # and its whole GPUs are separate capacity).
    gpus = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    mig_profile = models.CharField(max_length=20, blank=True, validators=[mig_profile_validator])
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    # The occurrences of one weekly request share a series.
    series = models.UUIDField(null=True, blank=True, db_index=True)
    # How long before the window others' preemptible work is drained (None: the default).
    lead_time = models.DurationField(null=True, blank=True)
    state = models.CharField(max_length=12, choices=State.choices, default=State.REQUESTED)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    requested_at = models.DateTimeField(default=clock.wall)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_reason = models.CharField(max_length=500, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)
    # GPUs the pool can no longer give it (nodes removed or cordoned since it was accepted):
    # reservations accepted earlier keep theirs, and the engine holds only the rest.
    short_gpus = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["starts_at", "pool__name"]
        indexes = [
            models.Index(fields=["pool", "state", "starts_at"], name="reservation_pool_window")
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(ends_at__gt=models.F("starts_at")), name="reservation_ends_after_start"
            ),
            models.CheckConstraint(condition=Q(gpus__gte=1), name="reservation_gpus_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.organization.slug}: {self.gpus} {self.gpu_class} in {self.pool}"

    @property
    def is_holding(self) -> bool:
        """Requested, approved or active: its GPUs are held, and it may still be cancelled."""
        return self.state in self.HOLDING_STATES

    @property
    def unit(self) -> str:
        return f"{self.mig_profile} instances" if self.mig_profile else "GPUs"

    @property
    def held_until(self) -> datetime:
        """The end of its window, or of what was used of it when it was cancelled."""
        if self.state == self.State.CANCELLED and self.cancelled_at is not None:
            return max(self.starts_at, min(self.ends_at, self.cancelled_at))
        return self.ends_at

    @property
    def held_gpus(self) -> int:
        """The GPUs its pool can still give it."""
        return self.gpus - self.short_gpus


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
    estimated_start = models.DateTimeField(null=True, blank=True)
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
    # When its Kubernetes objects were deleted (None while they may exist).
    objects_deleted_at = models.DateTimeField(null=True, blank=True)
    # Since when its objects must go (it ended or was requeued) and were not yet deleted: the
    # reconciler deletes them if the task that should have is lost.
    teardown_due_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-submitted_at"]
        indexes = [models.Index(fields=["state", "submitted_at"], name="workload_state_submitted")]
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

    class Meta:
        ordering = ["workload", "replica"]
        indexes = [
            models.Index(
                fields=["node"], condition=Q(ended_at__isnull=True), name="placement_active_node"
            )
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


class ProvisioningRecord(models.Model):
    """Whether the cluster holds what the portal wants for a project (or cluster-wide)."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"
        REMOVED = "removed", "Removed"

    project = models.OneToOneField(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="provisioning"
    )
    # The cluster-wide record (priority classes, node labels) has no project.
    scope = models.CharField(max_length=16, default="project")
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    error = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)
    provisioned_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["scope"],
                condition=Q(project__isnull=True),
                name="provisioning_cluster_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project or 'cluster'}: {self.state}"


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

    def __str__(self) -> str:
        return f"last cycle {self.last_cycle_at}: {self.last_cycle_ms:.0f} ms"


# The simulated cluster: the embedded default keeps its objects in the database, so that the web
# process and the workers see the same cluster.


class SimulatedObject(models.Model):
    api_version = models.CharField(max_length=64)
    kind = models.CharField(max_length=64)
    namespace = models.CharField(max_length=63, blank=True)
    name = models.CharField(max_length=253)
    manifest = models.JSONField()
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["kind", "namespace", "name"], name="simulated_object_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


class SimulatedNodeState(models.Model):
    name = models.CharField(max_length=253, unique=True)
    failed = models.BooleanField(default=False)
    labels = models.JSONField(default=dict, blank=True)
    taints = models.JSONField(default=list, blank=True)

    def __str__(self) -> str:
        return f"{self.name}{' (failed)' if self.failed else ''}"
