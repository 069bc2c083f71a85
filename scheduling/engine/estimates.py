"""Start-time estimates for pending work, ``squeue --start``-like: when the max runtimes of
running work free enough for it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from datetime import datetime

import numpy as np

from .backfill import Backfill
from .explain import CAPACITY_CODES, PendingCode
from .free_capacity import ClusterState
from .model import MILLI_PER_GPU, Request, RunningWorkload
from .quota import QuotaLedger
from .reservations import ReservationBook


class Estimator:
    """Estimates for the workloads a cycle leaves pending. Made once admissions are over:
    capacity and releases stay fixed from then on, so it memoises per node set and class."""

    def __init__(
        self,
        *,
        cluster: ClusterState,
        ledger: QuotaLedger,
        backfill: Backfill,
        reservations: ReservationBook,
        eligible: Callable[[Request, str], np.ndarray],
        now: datetime,
    ) -> None:
        """``eligible``: as ``Preemptor``'s, an array held to the end of the cycle per answer."""
        self._cluster = cluster
        self._ledger = ledger
        self._backfill = backfill
        self._reservations = reservations
        self._eligible = eligible
        self._now = now
        self._idle: dict[int, int] = {}
        self._profiles: dict[str, tuple[list[datetime], np.ndarray]] = {}
        self._releases_by_tenant: dict[str, dict[str, list[RunningWorkload]]] = {}

    def estimate(
        self, request: Request, code: PendingCode, gpu_class: str, needed: int
    ) -> datetime | None:
        """When releases free ``needed`` GPU milli of ``gpu_class`` (the work queued ahead in
        the class plus this one) for a request pending for ``code``; None: no estimate."""
        if code == PendingCode.QUOTA:
            return self._within_quota(request, gpu_class)
        if code not in CAPACITY_CODES and code != PendingCode.PRIORITY:
            return None
        eligible = self._eligible(request, gpu_class)
        start = self._released(request, gpu_class, eligible, needed)
        if start is None:
            return None
        capacity = int(self._cluster.gpu_count[eligible].sum()) * MILLI_PER_GPU
        return self._reservations.after_windows(
            request, gpu_class, start, need=needed, capacity=capacity
        )

    def _released(
        self, request: Request, gpu_class: str, eligible: np.ndarray, needed: int
    ) -> datetime | None:
        """When releases free ``needed`` milli-GPU on ``eligible`` (a class's blocked head:
        when its shadow starts)."""
        shadow = self._backfill.shadow(gpu_class)
        if shadow is not None and shadow.request_id == request.id:
            return shadow.starts_at
        free = self._idle.get(id(eligible))
        if free is None:
            free = self._idle[id(eligible)] = self._cluster.idle_gpu_milli(eligible)
        ends, released = self._release_profile(gpu_class)
        first = int(np.searchsorted(released, needed - free))
        if first >= len(ends):
            return None
        return max(ends[first], shadow.starts_at if shadow else self._now)

    def _within_quota(self, request: Request, gpu_class: str) -> datetime | None:
        """When the tenant's own releases leave its quota room for the request's gang minimum."""
        resource = request.quota_resource(gpu_class)
        quota = self._ledger.quota(tenant=request.tenant, resource=resource)
        if quota is None:
            return None
        used = self._ledger.tenant_usage[(request.tenant, resource)]
        excess = used + request.quota_amount * request.smallest_gang
        # With no cohort and no shared pool there is nothing to borrow: the guarantee is the
        # ceiling.
        may_borrow = quota.cohort or self._ledger.pool(resource)
        excess -= quota.limit if may_borrow else quota.guarantee
        for workload in self._tenant_releases(request.tenant, gpu_class):
            if workload.request.quota_resource(gpu_class) != resource:
                continue
            excess -= workload.request.quota_amount * len(workload.placements)
            if excess <= 0:
                return workload.expected_end
        return None

    def _tenant_releases(self, tenant: str, gpu_class: str) -> list[RunningWorkload]:
        """``Backfill.releases`` of one tenant (grouped once per class)."""
        by_tenant = self._releases_by_tenant.get(gpu_class)
        if by_tenant is None:
            by_tenant = self._releases_by_tenant[gpu_class] = defaultdict(list)
            for workload in self._backfill.releases(gpu_class):
                by_tenant[workload.request.tenant].append(workload)
        return by_tenant.get(tenant, [])

    def _release_profile(self, gpu_class: str) -> tuple[list[datetime], np.ndarray]:
        """End times of running work and the GPU milli released by each of them, cumulated."""
        profile = self._profiles.get(gpu_class)
        if profile is None:
            releases = self._backfill.releases(gpu_class)
            amounts = [w.request.gpu_milli_per_replica * len(w.placements) for w in releases]
            ends = [w.expected_end for w in releases if w.expected_end is not None]
            profile = self._profiles[gpu_class] = (ends, np.cumsum(amounts, dtype=np.int64))
        return profile
