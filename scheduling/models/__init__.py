"""GPU inventory, quotas, reservations and workloads, with their placements and timeline; and
the simulated cluster's storage. One module per concern; every model and validator is named
here, where migrations and the rest of the code find them."""

from .fairness import FairShareStanding, TenantUsage
from .inventory import (
    DEFAULT_NOTICE_SECONDS,
    NOTICE_MAX_SECONDS,
    Cluster,
    GpuClass,
    Node,
    NodeAvailability,
    NodePool,
    PriorityTier,
)
from .operations import CycleEndState, ProvisioningRecord, SchedulerState
from .quotas import QuotaGrant, QuotaGrantHistory, QuotaRequest
from .reservations import Reservation, ReservationRule
from .simulator import SimulatedClusterState, SimulatedNodeState, SimulatedObject
from .validators import (
    ENV_MAX_BYTES,
    ENV_MAX_VARIABLES,
    ENV_VALUE_MAX,
    IMAGE_MAX,
    ImageReferenceValidator,
    env_validator,
    gpu_class_name_validator,
    image_reference_validator,
    mig_profile_validator,
)
from .workloads import Eviction, Placement, Workload, WorkloadEvent, WorkloadLogTail

__all__ = [
    "DEFAULT_NOTICE_SECONDS",
    "ENV_MAX_BYTES",
    "ENV_MAX_VARIABLES",
    "ENV_VALUE_MAX",
    "IMAGE_MAX",
    "NOTICE_MAX_SECONDS",
    "Cluster",
    "CycleEndState",
    "Eviction",
    "FairShareStanding",
    "GpuClass",
    "ImageReferenceValidator",
    "Node",
    "NodeAvailability",
    "NodePool",
    "Placement",
    "PriorityTier",
    "ProvisioningRecord",
    "QuotaGrant",
    "QuotaGrantHistory",
    "QuotaRequest",
    "Reservation",
    "ReservationRule",
    "SchedulerState",
    "SimulatedClusterState",
    "SimulatedNodeState",
    "SimulatedObject",
    "TenantUsage",
    "Workload",
    "WorkloadEvent",
    "WorkloadLogTail",
    "env_validator",
    "gpu_class_name_validator",
    "image_reference_validator",
    "mig_profile_validator",
]
