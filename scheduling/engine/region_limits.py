"""Per-region caps on a tenant's quota: quotas stay global per tenant, and a quota may also cap
what the tenant holds in one region ("acme may use at most 16 H100 in us-east"). The cycle
keeps each capped tenant's holding per region up to date as it admits and evicts, and a region
where a request would go over its cap is not among the request's nodes."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np

from .capacity import SettledCapacity
from .model import NodeState, Quota, Request, RunningWorkload
from .quota import amount_label, resource_label


class RegionLimits:
    def __init__(
        self,
        *,
        quotas: Sequence[Quota],
        nodes: Sequence[NodeState],
        running: Iterable[RunningWorkload],
        settled: SettledCapacity,
    ) -> None:
        self._limits = {
            (q.tenant, q.resource): dict(q.region_limits)
            for q in quotas
            if q.project is None and q.region_limits
        }
        self._nodes = nodes
        self._region = {node.name: node.region for node in nodes}
        self._settled = settled
        self._used: dict[tuple[str, str, str], int] = defaultdict(int)
        # The node sets less some regions, by the set and the regions left out: arrays the
        # cycle's memos know by identity, so each is made once.
        self._outside: dict[tuple[int, frozenset[str]], np.ndarray] = {}
        for workload in running:
            self.charge(workload)

    def charge(self, workload: RunningWorkload, *, sign: int = 1) -> None:
        """Count a workload admitted (or, ``sign=-1``, evicted) in the regions of its nodes."""
        request = workload.request
        key = (request.tenant, request.quota_resource(workload.gpu_class))
        if key not in self._limits:
            return
        for placement in workload.placements:
            region = self._region.get(placement.node, "")
            self._used[(*key, region)] += sign * request.quota_amount

    def within(
        self, request: Request, gpu_class: str, eligible: np.ndarray, replicas: int
    ) -> tuple[np.ndarray, str]:
        """``eligible`` less the nodes of the regions where ``replicas`` more of the request
        would take the tenant over its cap; and why, when that leaves none."""
        resource = request.quota_resource(gpu_class)
        limits = self._limits.get((request.tenant, resource))
        if not limits or not request.needs_gpu:
            return eligible, ""
        need = request.quota_amount * replicas
        over = {}
        for region, limit in limits.items():
            used = self._used[(request.tenant, resource, region)]
            if used + need > limit:
                over[region] = (
                    f"{resource_label(resource)} in {region}: {amount_label(resource, used)} of"
                    f" {limit} in use by {request.tenant}, {amount_label(resource, need)} more"
                    " requested"
                )
        if not over:
            return eligible, ""
        key = (id(eligible), frozenset(over))
        outside = self._outside.get(key)
        if outside is None:
            kept = [i for i in eligible.tolist() if self._nodes[i].region not in over]
            outside = self._outside[key] = np.array(kept, dtype=np.int64)
            self._settled.keep(outside)
        regions = {self._nodes[i].region for i in eligible.tolist()}
        return outside, "; ".join(over[r] for r in sorted(regions & over.keys()))
