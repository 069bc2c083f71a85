"""The GPU inventory: the clusters, GPU classes, node pools, nodes, and the priority tiers
work runs at."""

from django.core.validators import MaxValueValidator, RegexValidator
from django.db import models

from tenants.models import slug_validator

from .validators import gpu_class_name_validator

# Kubernetes' own default terminationGracePeriodSeconds, and the longest notice a tier may give.
DEFAULT_NOTICE_SECONDS = 30
NOTICE_MAX_SECONDS = 3600


# Where a Kubernetes cluster's kubeconfig is: `env:NAME` (the environment variable NAME holds
# the file's path) or the path of a mounted file (a Secret volume); never the secret itself.
kubeconfig_reference_validator = RegexValidator(
    r"^(env:[A-Za-z_][A-Za-z0-9_]*|/\S+)$",
    "Give env:VARIABLE (naming the file) or the absolute path of a mounted kubeconfig file.",
)


class Cluster(models.Model):
    """A GPU cluster the portal drives through one backend; pools belong to one cluster."""

    class Backend(models.TextChoices):
        SIMULATED = "simulated", "Simulated"
        KUBERNETES = "kubernetes", "Kubernetes"

    class State(models.TextChoices):
        READY = "ready", "Ready"
        UNREACHABLE = "unreachable", "Unreachable"

    name = models.CharField(max_length=40, unique=True, validators=[slug_validator])
    region = models.CharField(max_length=40, validators=[slug_validator])
    backend = models.CharField(max_length=16, choices=Backend.choices)
    kubeconfig = models.CharField(
        max_length=255,
        blank=True,
        validators=[kubeconfig_reference_validator],
        help_text="Kubernetes: env:VARIABLE naming the kubeconfig file, or its mounted path;"
        " empty: the in-cluster service account (or the process's KUBECONFIG).",
    )
    simulated_path = models.CharField(
        max_length=255,
        blank=True,
        help_text="Simulated: the cluster description file; empty: PORTAL_SIMULATED_CLUSTER.",
    )
    state = models.CharField(max_length=16, choices=State.choices, default=State.READY)
    last_seen_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


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
    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="pools")
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
    # The preemption contract (none: today's rules). Reservation drains keep to none of them:
    # the holder bought that capacity, and its window's lead time is the notice.
    min_run_time = models.DurationField(
        null=True,
        blank=True,
        help_text="Work of this tier runs at least this long before it may be preempted.",
    )
    notice_seconds = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MaxValueValidator(NOTICE_MAX_SECONDS)],
        help_text="Seconds between SIGTERM and SIGKILL when its work is evicted (the pods'"
        " terminationGracePeriodSeconds; none: Kubernetes' 30).",
    )
    max_evictions = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Evicted this many times, its work is no longer a preemption candidate.",
    )
    # Spot-like tiers sell cheap capacity that may vanish: their lost work is theirs to lose.
    lost_work_credited = models.BooleanField(
        default=True,
        help_text="Work of this tier evicted by preemption, reclaim or a reservation's drain is"
        " credited the GPU-seconds it lost since its last checkpoint, at the price it paid.",
    )

    class Meta:
        ordering = ["-value"]

    def __str__(self) -> str:
        return self.name

    @property
    def notice(self) -> int:
        """The notice its evicted work gets, in seconds."""
        return DEFAULT_NOTICE_SECONDS if self.notice_seconds is None else self.notice_seconds


class NodeAvailability(models.Model):
    """A span over which a node was in one state with one inventory: the history the
    operator's books read to tell a pool's available hours from its unavailable ones. Written
    by the inventory sync and by cordoning (``node_availability_record``); the open span
    (``ends_at`` None) is the node's state now."""

    class State(models.TextChoices):
        AVAILABLE = "available", "Available"
        CORDONED = "cordoned", "Cordoned"
        NOT_READY = "not_ready", "Not ready"

    id = models.BigAutoField(primary_key=True)
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="availability")
    pool = models.ForeignKey(NodePool, on_delete=models.PROTECT, related_name="+")
    state = models.CharField(max_length=10, choices=State.choices)
    gpu_count = models.PositiveSmallIntegerField()
    mig_layout = models.JSONField(default=dict, blank=True)
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["node", "starts_at"]
        indexes = [models.Index(fields=["pool", "starts_at"], name="node_availability_pool")]
        constraints = [
            models.UniqueConstraint(
                fields=["node"],
                condition=models.Q(ends_at__isnull=True),
                name="node_availability_one_open",
            ),
            models.CheckConstraint(
                condition=models.Q(ends_at__isnull=True)
                | models.Q(ends_at__gt=models.F("starts_at")),
                name="node_availability_ends_after",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.node}: {self.state} from {self.starts_at:%Y-%m-%d %H:%M}"

    @staticmethod
    def state_of(node: Node) -> str:
        """What a node's flags make it: not ready before cordoned (a node that is down is
        unavailable whatever the operator said)."""
        if not node.ready:
            return NodeAvailability.State.NOT_READY
        if node.cordoned:
            return NodeAvailability.State.CORDONED
        return NodeAvailability.State.AVAILABLE
