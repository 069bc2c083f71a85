"""The scheduling engine: pure Python (no Django), deterministic, numpy where it pays.

Django calls ``schedule_keeping`` once per cycle (and ``what_if`` against the state it
keeps), ``validate_request`` at submission, and the capacity views for the console and
/metrics.
"""

from .capacity import FragmentationView, PoolCapacity, fragmentation, pool_capacity
from .estimates import Calibration, calibration, interval_scale
from .explain import PendingCode
from .fragmentation import typical_workload
from .model import (
    Admission,
    ClusterSnapshot,
    Decisions,
    NodeSelectorRequirement,
    NodeState,
    PendingReason,
    Policy,
    Preemption,
    PreferredAffinity,
    Quota,
    ReplicaPlacement,
    Request,
    Reservation,
    RunningWorkload,
    RuntimeSamples,
    SelectorOperator,
    StartRange,
    Taint,
    TaintEffect,
    TaskType,
    Toleration,
    TolerationOperator,
)
from .parking import Parking
from .policies import PLACEMENT_POLICIES
from .quota import QuotaLedger, quota_capacity, validate_request
from .schedule import schedule
from .victims import lost_since
from .what_if import CycleEnd, WhatIf, schedule_keeping, what_if

__all__ = [
    "PLACEMENT_POLICIES",
    "Admission",
    "Calibration",
    "ClusterSnapshot",
    "CycleEnd",
    "Decisions",
    "FragmentationView",
    "NodeSelectorRequirement",
    "NodeState",
    "Parking",
    "PendingCode",
    "PendingReason",
    "Policy",
    "PoolCapacity",
    "Preemption",
    "PreferredAffinity",
    "Quota",
    "QuotaLedger",
    "ReplicaPlacement",
    "Request",
    "Reservation",
    "RunningWorkload",
    "RuntimeSamples",
    "SelectorOperator",
    "StartRange",
    "Taint",
    "TaintEffect",
    "TaskType",
    "Toleration",
    "TolerationOperator",
    "WhatIf",
    "calibration",
    "fragmentation",
    "interval_scale",
    "lost_since",
    "pool_capacity",
    "quota_capacity",
    "schedule",
    "schedule_keeping",
    "typical_workload",
    "validate_request",
    "what_if",
]
