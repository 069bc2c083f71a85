"""Quotas per tenant (and project) per GPU class: a guarantee, a limit, and a cohort.

A tenant may use up to its guarantee at any time; above it, up to its limit, only by borrowing
guarantees its cohort leaves unused. Borrowed work is reclaimable: a tenant back under its
guarantee may preempt it. Amounts are kept in milli-GPU.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .model import MILLI_PER_GPU, NodeState, Quota, Request, RunningWorkload


@dataclass(frozen=True)
class QuotaVerdict:
    allowed: bool
    borrowed: bool = False
    reason: str = ""


def _gpus(milli: int) -> str:
    return f"{milli / MILLI_PER_GPU:g}"


class QuotaLedger:
    """Usage against quotas, updated as the cycle admits and preempts."""

    def __init__(self, *, quotas: Sequence[Quota], running: Iterable[RunningWorkload]) -> None:
        self._tenant = {(q.tenant, q.gpu_class): q for q in quotas if q.project is None}
        self._project = {
            (q.tenant, q.project, q.gpu_class): q for q in quotas if q.project is not None
        }
        self._cohort_guarantee: dict[tuple[str, str], int] = defaultdict(int)
        for quota in self._tenant.values():
            if quota.cohort:
                key = (quota.cohort, quota.gpu_class)
                self._cohort_guarantee[key] += quota.guarantee * MILLI_PER_GPU
        self.tenant_usage: dict[tuple[str, str], int] = defaultdict(int)
        self.project_usage: dict[tuple[str, str, str], int] = defaultdict(int)
        # Kept up to date by ``charge`` so that a borrowing check is O(1), not O(tenants).
        self._cohort_usage: dict[tuple[str, str], int] = defaultdict(int)
        for workload in running:
            self.charge(
                request=workload.request,
                gpu_class=workload.gpu_class,
                replicas=len(workload.placements),
            )

    def quota(self, *, tenant: str, gpu_class: str) -> Quota | None:
        return self._tenant.get((tenant, gpu_class))

    def cohort_usage(self, *, cohort: str, gpu_class: str) -> int:
        """Usage of every tenant whose quota for ``gpu_class`` is in ``cohort``."""
        return self._cohort_usage[(cohort, gpu_class)]

    def check(self, *, request: Request, gpu_class: str, replicas: int) -> QuotaVerdict:
        need = request.gpu_milli_per_replica * replicas
        if not need:
            return QuotaVerdict(allowed=True)
        quota = self._tenant.get((request.tenant, gpu_class))
        if quota is None:
            return QuotaVerdict(False, reason=f"{gpu_class}: no quota for {request.tenant}")
        used = self.tenant_usage[(request.tenant, gpu_class)]
        if used + need > quota.limit * MILLI_PER_GPU:
            return QuotaVerdict(
                False,
                reason=f"{gpu_class}: {_gpus(used)} of {quota.limit} in use by {request.tenant}"
                f", {_gpus(need)} more requested",
            )
        project_quota = self._project.get((request.tenant, request.project, gpu_class))
        if project_quota is not None:
            project_used = self.project_usage[(request.tenant, request.project, gpu_class)]
            if project_used + need > project_quota.limit * MILLI_PER_GPU:
                return QuotaVerdict(
                    False,
                    reason=f"{gpu_class}: {_gpus(project_used)} of {project_quota.limit} in use"
                    f" by {request.tenant}/{request.project}, {_gpus(need)} more requested",
                )
        if used + need <= quota.guarantee * MILLI_PER_GPU:
            return QuotaVerdict(allowed=True)
        if not quota.cohort:
            return QuotaVerdict(
                False,
                reason=f"{gpu_class}: {_gpus(used)} of {quota.guarantee} guaranteed in use by"
                f" {request.tenant} and no cohort to borrow from",
            )
        pool = self._cohort_guarantee[(quota.cohort, gpu_class)]
        cohort_used = self.cohort_usage(cohort=quota.cohort, gpu_class=gpu_class)
        if cohort_used + need > pool:
            return QuotaVerdict(
                False,
                reason=f"{gpu_class}: cohort {quota.cohort} has {_gpus(cohort_used)} of"
                f" {_gpus(pool)} in use, nothing left to borrow",
            )
        return QuotaVerdict(allowed=True, borrowed=True)

    def most_replicas(self, *, request: Request, gpu_class: str) -> tuple[int, QuotaVerdict]:
        """The most replicas of ``request``, at least its gang's minimum, allowed now, with
        their verdict; or 0 with the verdict on the minimum.

        Whatever a quota allows, it allows less of too, so a binary search between the
        minimum and the full count finds the most.
        """
        verdict = self.check(request=request, gpu_class=gpu_class, replicas=request.replicas)
        if verdict.allowed:
            return request.replicas, verdict
        low, high = request.smallest_gang, request.replicas - 1
        if low < request.replicas:
            verdict = self.check(request=request, gpu_class=gpu_class, replicas=low)
        if not verdict.allowed:
            return 0, verdict
        while low < high:  # ``low`` replicas are allowed, ``high + 1`` are not
            middle = (low + high + 1) // 2
            if self.check(request=request, gpu_class=gpu_class, replicas=middle).allowed:
                low = middle
            else:
                high = middle - 1
        return low, self.check(request=request, gpu_class=gpu_class, replicas=low)

    def is_borrowing(self, *, tenant: str, gpu_class: str) -> bool:
        quota = self._tenant.get((tenant, gpu_class))
        used = self.tenant_usage[(tenant, gpu_class)]
        return quota is not None and used > quota.guarantee * MILLI_PER_GPU

    def charge(self, *, request: Request, gpu_class: str, replicas: int, sign: int = 1) -> None:
        amount = sign * request.gpu_milli_per_replica * replicas
        self.tenant_usage[(request.tenant, gpu_class)] += amount
        self.project_usage[(request.tenant, request.project, gpu_class)] += amount
        quota = self._tenant.get((request.tenant, gpu_class))
        if quota is not None and quota.cohort:
            self._cohort_usage[(quota.cohort, gpu_class)] += amount


def dominant_shares(
    *,
    ledger: QuotaLedger,
    nodes: Sequence[NodeState],
    weights: dict[str, float] | None = None,
) -> dict[str, float]:
    """DRF: each tenant's largest share of any GPU class's capacity, divided by its weight."""
    capacity: dict[str, int] = defaultdict(int)
    for node in nodes:
        capacity[node.gpu_class] += len(node.gpu_free_milli) * MILLI_PER_GPU
    shares: dict[str, float] = defaultdict(float)
    for (tenant, gpu_class), used in ledger.tenant_usage.items():
        if capacity[gpu_class]:
            share = used / capacity[gpu_class] / (weights or {}).get(tenant, 1.0)
            shares[tenant] = max(shares[tenant], share)
    return shares


def validate_request(
    *, request: Request, quotas: Sequence[Quota], nodes: Sequence[NodeState] = ()
) -> dict[str, list[str]]:
    """Field errors that make a request impossible to ever admit (empty dict: valid).

    Called at submission, so that a request bigger than its limit is rejected instead of
    queued forever. ``nodes`` (optional) also rejects a replica that asks more GPUs, CPU or
    memory than any node that could run it has.
    """
    errors: dict[str, list[str]] = defaultdict(list)
    forms = sum(bool(x) for x in (request.gpus, request.gpu_milli, request.mig_count))
    if forms > 1:
        errors["gpus"].append("Ask for whole GPUs, a GPU share or MIG instances, not several.")
    if request.gpus < 0 or request.mig_count < 0:
        errors["gpus"].append("GPU amounts cannot be negative.")
    if request.gpu_milli and not 0 < request.gpu_milli < MILLI_PER_GPU:
        errors["gpu_milli"].append("A GPU share is between 1 and 999 milli-GPU.")
    if bool(request.mig_count) != bool(request.mig_profile):
        errors["mig_profile"].append("A MIG request names a profile and a count.")
    if request.replicas < 1:
        errors["replicas"].append("At least one replica.")
    if request.min_replicas is not None and not 1 <= request.min_replicas <= request.replicas:
        errors["min_replicas"].append(f"Between 1 and replicas ({request.replicas}).")
    needs_gpu = request.gpu_milli_per_replica > 0
    if needs_gpu and not request.gpu_classes:
        errors["gpu_classes"].append("Name at least one acceptable GPU class.")
    if errors:
        return dict(errors)
    for field, messages in larger_than_any_node(request, nodes).items():
        errors[field].extend(messages)
    if not needs_gpu:
        return dict(errors)
    need = request.gpu_milli_per_replica * request.smallest_gang
    limits = {
        q.gpu_class: q.limit
        for q in quotas
        if q.tenant == request.tenant and q.project is None and q.gpu_class in request.gpu_classes
    }
    if not any(need <= limit * MILLI_PER_GPU for limit in limits.values()):
        shown = ", ".join(f"{c}: {limits.get(c, 0)}" for c in request.gpu_classes)
        errors["gpus"].append(
            f"{_gpus(need)} GPUs exceed the quota limit of {request.tenant} ({shown})."
        )
    return dict(errors)


def larger_than_any_node(request: Request, nodes: Sequence[NodeState]) -> dict[str, list[str]]:
    """Field errors for each resource of which a replica asks more than the largest node that
    could run it has (a node of an acceptable GPU class, or any node for CPU-only work); none
    when no node is given."""
    errors: dict[str, list[str]] = defaultdict(list)
    if not nodes:
        return {}
    if request.needs_gpu:
        nodes = [n for n in nodes if n.gpu_class in request.gpu_classes]
    if request.gpus:
        largest = max((len(n.gpu_free_milli) for n in nodes), default=0)
        if request.gpus > largest:
            errors["gpus"].append(
                f"{request.gpus} GPUs per replica, but the largest node has {largest}."
            )
    if not nodes:
        return dict(errors)
    largest = max(n.cpu_free_milli for n in nodes)
    if request.cpu_milli > largest:
        errors["cpu_milli"].append(
            f"{request.cpu_milli} milli-CPU per replica, but the largest node has {largest}."
        )
    largest = max(n.memory_free_mib for n in nodes)
    if request.memory_mib > largest:
        errors["memory_mib"].append(
            f"{request.memory_mib} MiB of memory per replica, but the largest node has"
            f" {largest} MiB."
        )
    return dict(errors)
