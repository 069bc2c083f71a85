"""The engine's contract: plain, immutable dataclasses in, decisions out.

Units: GPU shares in milli-GPU (1000 = one whole GPU), CPU in milli-cores, memory in MiB.
A ``NodeState`` carries what is *free* now: running workloads are already subtracted, and
each ``RunningWorkload`` says where it sits so that preemption can give its share back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

MILLI_PER_GPU = 1000
MIG_SLICES_PER_GPU = 7
SHARED = "shared"


class TaintEffect(StrEnum):
    NO_SCHEDULE = "NoSchedule"
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    NO_EXECUTE = "NoExecute"


class TolerationOperator(StrEnum):
    EQUAL = "Equal"
    EXISTS = "Exists"


class SelectorOperator(StrEnum):
    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"
    GT = "Gt"
    LT = "Lt"


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: TaintEffect = TaintEffect.NO_SCHEDULE


@dataclass(frozen=True)
class Toleration:
    """Kubernetes semantics: an empty key with ``Exists`` tolerates every taint."""

    key: str = ""
    operator: TolerationOperator = TolerationOperator.EQUAL
    value: str = ""
    effect: TaintEffect | None = None


@dataclass(frozen=True)
class NodeSelectorRequirement:
    key: str
    operator: SelectorOperator
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class PreferredAffinity:
    weight: int
    requirements: tuple[NodeSelectorRequirement, ...]


@dataclass(frozen=True)
class NodeState:
    name: str
    pool: str
    gpu_class: str
    gpu_free_milli: tuple[int, ...]
    cpu_free_milli: int
    memory_free_mib: int
    mig_free: Mapping[str, int] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    topology: Mapping[str, str] = field(default_factory=dict)
    cordoned: bool = False
    # The cluster the node is in, and the cluster's region: a workload never spans clusters.
    cluster: str = ""
    region: str = ""


@dataclass(frozen=True)
class Request:
    """A workload asking for capacity; every amount is per replica.

    Exactly one GPU form applies: ``gpus`` whole GPUs, or ``gpu_milli`` of one shared GPU,
    or ``mig_count`` instances of ``mig_profile``; none of them means CPU-only.
    ``tier`` is a priority: a higher number is more important.
    """

    id: str
    tenant: str
    project: str
    tier: int
    gpu_classes: tuple[str, ...]
    submitted_at: datetime
    gpus: int = 0
    gpu_milli: int = 0
    mig_profile: str | None = None
    mig_count: int = 0
    replicas: int = 1
    min_replicas: int | None = None
    cpu_milli: int = 0
    memory_mib: int = 0
    pools: tuple[str, ...] = ()
    # The region it is pinned to (None: any).
    region: str | None = None
    tolerations: tuple[Toleration, ...] = ()
    required_affinity: tuple[NodeSelectorRequirement, ...] = ()
    preferred_affinity: tuple[PreferredAffinity, ...] = ()
    anti_affinity: bool = False
    required_topology: str | None = None
    max_runtime: timedelta | None = None
    preemptible: bool = True
    evicted_by: tuple[str, ...] = ()
    # Its tier's preemption contract: it runs this long before it may be preempted, and once
    # evicted ``max_evictions`` times (None: no cap) it is no longer a candidate.
    min_run_time: timedelta = timedelta(0)
    max_evictions: int | None = None
    evictions: int = 0

    @property
    def needs_gpu(self) -> bool:
        """It asks for whole GPUs, a GPU share or MIG instances; otherwise it is CPU-only."""
        return bool(self.gpus or self.gpu_milli or self.mig_count)

    @property
    def gpu_milli_per_replica(self) -> int:
        """GPU amount one replica charges against quota, in milli-GPU."""
        if self.gpus:
            return self.gpus * MILLI_PER_GPU
        if self.gpu_milli:
            return self.gpu_milli
        if self.mig_profile and self.mig_count:
            return self.mig_count * mig_profile_milli(self.mig_profile)
        return 0

    @property
    def smallest_gang(self) -> int:
        return self.min_replicas if self.min_replicas is not None else self.replicas

    def quota_resource(self, gpu_class: str) -> str:
        """What one replica counts against on ``gpu_class``: its whole GPUs, its GPU shares or
        its MIG profile (``quota_resource``)."""
        return quota_resource(gpu_class, mig_profile=self.mig_profile, shared=bool(self.gpu_milli))

    @property
    def quota_amount(self) -> int:
        """What one replica counts against its quota resource: GPUs, milli-GPU of a share, or
        MIG instances."""
        return self.gpus or self.gpu_milli or self.mig_count


def quota_resource(gpu_class: str, *, mig_profile: str | None = None, shared: bool = False) -> str:
    """The key quotas count by, as the namespace's ResourceQuota does: a class's whole GPUs
    ("H100"), its GPU shares ("H100/shared", in milli-GPU) or one of its MIG profiles
    ("H100/mig-1g.10gb", in instances)."""
    if mig_profile:
        return f"{gpu_class}/{mig_profile}"
    if shared:
        return f"{gpu_class}/{SHARED}"
    return gpu_class


def mig_profile_slices(profile: str) -> int:
    """A MIG instance's compute slices, of a GPU's seven ("mig-3g.40gb" has 3)."""
    return int(profile.removeprefix("mig-").split("g", 1)[0])


def mig_profile_milli(profile: str) -> int:
    """A MIG instance costs its compute slices out of seven ("mig-3g.40gb" is 3/7 GPU)."""
    return mig_profile_slices(profile) * MILLI_PER_GPU // MIG_SLICES_PER_GPU


@dataclass(frozen=True)
class ReplicaPlacement:
    node: str
    gpu_indices: tuple[int, ...] = ()
    gpu_milli: int = 0
    mig_profile: str | None = None
    mig_count: int = 0
    cpu_milli: int = 0
    memory_mib: int = 0


@dataclass(frozen=True)
class RunningWorkload:
    request: Request
    gpu_class: str
    placements: tuple[ReplicaPlacement, ...]
    started_at: datetime
    borrowed: bool = False
    # Its last checkpoint as reported, and the interval it declared it checkpoints at (from
    # ``started_at``): evicted, it loses only the work since the later of them.
    last_checkpoint: datetime | None = None
    checkpoint_interval: timedelta | None = None

    @property
    def expected_end(self) -> datetime | None:
        runtime = self.request.max_runtime
        return self.started_at + runtime if runtime is not None else None


@dataclass(frozen=True)
class Quota:
    """Whole GPUs of one class for a tenant, or for one project when ``project`` is set; or,
    with ``mig_profile``, instances of that MIG profile; or, with ``shared``, milli-GPU of
    GPU shares of the class."""

    tenant: str
    gpu_class: str
    guarantee: int
    limit: int
    project: str | None = None
    cohort: str | None = None
    mig_profile: str | None = None
    shared: bool = False
    # A tenant's quota only: the most it may hold in a region, as (region, amount) pairs.
    region_limits: tuple[tuple[str, int], ...] = ()

    @property
    def resource(self) -> str:
        return quota_resource(self.gpu_class, mig_profile=self.mig_profile, shared=self.shared)


@dataclass(frozen=True)
class Reservation:
    id: str
    tenant: str
    gpu_class: str
    # Whole GPUs, or with ``mig_profile`` instances of that profile.
    gpus: int
    pool: str
    starts_at: datetime
    ends_at: datetime
    # How long before the window its capacity is drained of others' preemptible work (None:
    # the policy's ``reservation_lead_time``).
    lead_time: timedelta | None = None
    # Held for one project of the tenant (None: for all of them).
    project: str | None = None
    mig_profile: str | None = None

    def holds_for(self, request: Request) -> bool:
        """Whether ``request`` is work the reservation holds its capacity for."""
        return self.tenant == request.tenant and self.project in (None, request.project)

    def same_resource(self, request: Request) -> bool:
        """Whether ``request`` asks for what the reservation holds: whole GPUs (or shares of
        them), or instances of its MIG profile; a node's MIG instances and its whole GPUs are
        separate capacity."""
        return self.mig_profile == (request.mig_profile if request.mig_count else None)

    @property
    def unit(self) -> str:
        return f"{self.mig_profile} instances" if self.mig_profile else "GPUs"

    def is_active(self, *, now: datetime) -> bool:
        return self.starts_at <= now < self.ends_at


@dataclass(frozen=True)
class RuntimeSamples:
    """How long finished work actually ran, in seconds (ascending), per bucket of similar work,
    and the bucket of each workload by id: the start estimates draw running work's remaining
    time from its bucket ``draws`` times, with a generator seeded by ``seed``. A workload in no
    bucket runs to its max runtime."""

    buckets: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    bucket_of: Mapping[str, str] = field(default_factory=dict)
    seed: int = 0
    draws: int = 64
    # How far each interval's sides are stretched about its most likely start so that it
    # holds as often as it says (``estimates.interval_scale``, from recent estimates judged
    # against their actual starts); 1: as the draws give it.
    interval_scale: float = 1.0


@dataclass(frozen=True)
class ClusterSnapshot:
    nodes: tuple[NodeState, ...]
    quotas: tuple[Quota, ...] = ()
    reservations: tuple[Reservation, ...] = ()
    topology_levels: tuple[str, ...] = ("rack", "block")
    tenant_weights: Mapping[str, float] = field(default_factory=dict)
    # Each tenant's decayed past usage as a share of the cluster (``fairness.UsageDecay``):
    # added to what it holds now wherever fair share is compared (none: only what runs now).
    tenant_usage: Mapping[str, float] = field(default_factory=dict)
    # One empty node of each shape the schedulable nodes have: a replica larger than all of
    # them waits as never_fits, however much is free (none given: not checked).
    node_shapes: tuple[NodeState, ...] = ()
    # What similar work actually ran, for the start estimates (none: max runtimes only).
    runtimes: RuntimeSamples = field(default_factory=RuntimeSamples)


@dataclass(frozen=True)
class TaskType:
    """One kind of replica in the expected workload mix (the FGD paper's task type)."""

    cpu_milli: int
    gpus: int
    gpu_milli: int
    gpu_classes: frozenset[str] | None = None


@dataclass(frozen=True)
class Policy:
    placement: str = "fgd"
    seed: int = 0
    target_workload: tuple[tuple[TaskType, float], ...] | None = None
    backfill: bool = True
    preemption: bool = True
    # Work on borrowed capacity runs at least this long before its lender reclaims it, so that
    # nothing admitted is evicted a cycle later.
    reclaim_after: timedelta = timedelta(minutes=10)
    # A reservation's capacity is emptied of others' preemptible work this long before its
    # window opens, unless the reservation says otherwise.
    reservation_lead_time: timedelta = timedelta(minutes=15)


@dataclass(frozen=True)
class Admission:
    request_id: str
    gpu_class: str
    placements: tuple[ReplicaPlacement, ...]
    borrowed: bool = False
    preemptible: bool = True


@dataclass(frozen=True)
class Preemption:
    """An eviction, for a pending workload (``preemptor_id``) or, with none, to drain a
    reservation's capacity before its window (its id in ``reservation_id``)."""

    victim_id: str
    preemptor_id: str | None
    reason: str
    message: str
    reservation_id: str | None = None


@dataclass(frozen=True)
class StartRange:
    """An estimated start: the most likely (the median of the draws) and the 80% interval
    around it; ``high`` None: a tenth of the draws or more never free enough."""

    likely: datetime
    low: datetime
    high: datetime | None

    def stretched(self, scale: float, *, now: datetime) -> StartRange:
        """Its sides ``scale`` times as wide about the most likely start (``low`` not before
        ``now``): ``estimates.interval_scale``."""
        if scale == 1:
            return self
        return StartRange(
            likely=self.likely,
            low=max(now, self.likely - scale * (self.likely - self.low)),
            high=None if self.high is None else self.likely + scale * (self.high - self.likely),
        )


@dataclass(frozen=True)
class PendingReason:
    request_id: str
    code: str
    message: str
    queue_position: int
    # The most likely start, and the 80% interval around it (high None: no upper bound known).
    estimated_start: datetime | None
    estimated_start_low: datetime | None = None
    estimated_start_high: datetime | None = None


@dataclass(frozen=True)
class QuotaStanding:
    """A tenant's own quota of one resource as a cycle leaves it: what it holds above its
    guarantee, and what more it could borrow now (beyond its unused guarantee)."""

    tenant: str
    resource: str
    borrowed: int
    borrowable: int


@dataclass(frozen=True)
class Decisions:
    admissions: tuple[Admission, ...]
    preemptions: tuple[Preemption, ...]
    pending: tuple[PendingReason, ...]
    standings: tuple[QuotaStanding, ...] = ()
    # The answers the next cycle may reuse (``schedule``'s ``parked``): no decision of its own.
    parking: object = field(default=None, compare=False, repr=False)
