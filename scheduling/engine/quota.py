"""Quotas per tenant (and project) per quota resource: a class's whole GPUs, its GPU shares or
one of its MIG profiles (``model.quota_resource``), each with a guarantee, a limit and a cohort.

A tenant may use up to its guarantee at any time. Above it, up to its limit, it borrows: first
the guarantees its cohort leaves unused, then the shared pool, the capacity no guarantee covers
(every tenant may borrow from it, with or without a cohort). Borrowed work is reclaimable: a
tenant back under its guarantee may preempt it, and a tenant holding less than its fair share
of lent capacity may preempt the excess of one holding more (``Preemptor``). Amounts are in the
resource's unit: GPUs, milli-GPU or MIG instances.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .eligibility import BLOCKING_EFFECTS, untolerated_taints
from .model import (
    MILLI_PER_GPU,
    SHARED,
    NodeState,
    Quota,
    QuotaStanding,
    Request,
    RunningWorkload,
)


@dataclass(frozen=True)
class QuotaVerdict:
    allowed: bool
    borrowed: bool = False
    reason: str = ""
    # Refused only because everything lendable is already lent: evicting others' borrowed work
    # (a fair-share reclaim) could make room.
    lent_out: bool = False


def resource_label(resource: str) -> str:
    """ "H100", "H100 shares" or "H100 mig-1g.10gb", as sentences name a quota resource."""
    gpu_class, _, kind = resource.partition("/")
    if not kind:
        return gpu_class
    return f"{gpu_class} {'shares' if kind == SHARED else kind}"


def amount_label(resource: str, amount: int) -> str:
    """An amount in its resource's unit, for sentences: "3", "1500 milli-GPU", "2 instances"."""
    _, _, kind = resource.partition("/")
    if not kind:
        return str(amount)
    if kind == SHARED:
        return f"{amount} milli-GPU"
    return f"{amount} instance{'' if amount == 1 else 's'}"


def quota_capacity(
    nodes: Sequence[NodeState], running: Iterable[RunningWorkload]
) -> dict[str, int]:
    """How much of each quota resource the schedulable nodes hold: GPUs per class, the same
    in milli-GPU for shares, and MIG instances per profile (free now plus those running)."""
    capacity: dict[str, int] = defaultdict(int)
    schedulable = {n.name: n for n in nodes if not n.cordoned}
    for node in schedulable.values():
        capacity[node.gpu_class] += len(node.gpu_free_milli)
        capacity[f"{node.gpu_class}/{SHARED}"] += len(node.gpu_free_milli) * MILLI_PER_GPU
        for profile, free in node.mig_free.items():
            capacity[f"{node.gpu_class}/{profile}"] += free
    for workload in running:
        for placement in workload.placements:
            node = schedulable.get(placement.node)
            if node is not None and placement.mig_profile:
                capacity[f"{node.gpu_class}/{placement.mig_profile}"] += placement.mig_count
    return dict(capacity)


class QuotaLedger:
    """Usage against quotas, updated as the cycle admits and preempts.

    Borrowing is kept per lending group (a cohort, or a tenant on its own): what its members
    hold above their guarantees, and what they leave unused of them. A group draws on the
    shared pool what its borrowing exceeds its unused guarantees by; the draws of all groups
    never exceed the pool. Each sum is kept up to date by ``charge``, so a check is O(1).
    """

    def __init__(
        self,
        *,
        quotas: Sequence[Quota],
        running: Iterable[RunningWorkload],
        capacity: Mapping[str, int] | None = None,
        weights: Mapping[str, float] | None = None,
        usage: Mapping[str, float] | None = None,
    ) -> None:
        """``capacity``: per quota resource (``quota_capacity``); none: no shared pool.
        ``usage``: each tenant's decayed past usage as a share (``ClusterSnapshot.tenant_usage``).
        """
        self._tenant = {(q.tenant, q.resource): q for q in quotas if q.project is None}
        self._project = {
            (q.tenant, q.project, q.resource): q for q in quotas if q.project is not None
        }
        self._capacity = dict(capacity or {})
        self._weights = dict(weights or {})
        self.usage = dict(usage or {})
        guaranteed: dict[str, int] = defaultdict(int)
        for quota in self._tenant.values():
            guaranteed[quota.resource] += quota.guarantee
        self._pool = {
            resource: max(self._capacity.get(resource, 0) - total, 0)
            for resource, total in guaranteed.items()
        }
        self.tenant_usage: dict[tuple[str, str], int] = defaultdict(int)
        self.project_usage: dict[tuple[str, str, str], int] = defaultdict(int)
        # Milli-GPU per (tenant, class), whatever the form: what DRF compares.
        self.class_usage: dict[tuple[str, str], int] = defaultdict(int)
        self._group_borrowed: dict[tuple[str, str], int] = defaultdict(int)
        self._group_unused: dict[tuple[str, str], int] = defaultdict(int)
        self._drawn: dict[str, int] = defaultdict(int)
        for quota in self._tenant.values():
            self._group_unused[(self._group(quota), quota.resource)] += quota.guarantee
        for workload in running:
            self.charge(
                request=workload.request,
                gpu_class=workload.gpu_class,
                replicas=len(workload.placements),
            )

    @staticmethod
    def _group(quota: Quota) -> str:
        return f"cohort:{quota.cohort}" if quota.cohort else f"tenant:{quota.tenant}"

    def weight(self, tenant: str) -> float:
        return self._weights.get(tenant, 1.0)

    def quota(self, *, tenant: str, resource: str) -> Quota | None:
        return self._tenant.get((tenant, resource))

    def pool(self, resource: str) -> int:
        """The capacity of ``resource`` that no guarantee covers."""
        return self._pool.get(resource, 0)

    def drawn(self, resource: str) -> int:
        """How much of ``resource``'s shared pool is borrowed."""
        return self._drawn[resource]

    def borrowed(self, *, tenant: str, resource: str, extra: int = 0) -> int:
        """What ``tenant`` holds of ``resource`` above its guarantee (with ``extra`` more)."""
        quota = self._tenant.get((tenant, resource))
        guarantee = quota.guarantee if quota is not None else 0
        return max(self.tenant_usage[(tenant, resource)] + extra - guarantee, 0)

    def lent_share(self, *, tenant: str, resource: str, extra: int = 0) -> float:
        """What ``tenant`` borrows of ``resource`` (with ``extra`` more), as a share of the
        resource's capacity, plus its decayed past usage, divided by the tenant's weight:
        fair-share reclaim compares it."""
        capacity = self._capacity.get(resource) or 1
        borrowed = self.borrowed(tenant=tenant, resource=resource, extra=extra)
        return (borrowed / capacity + self.usage.get(tenant, 0.0)) / self.weight(tenant)

    def check(self, *, request: Request, gpu_class: str, replicas: int) -> QuotaVerdict:
        need = request.quota_amount * replicas
        if not need:
            return QuotaVerdict(allowed=True)
        resource = request.quota_resource(gpu_class)
        label = resource_label(resource)
        quota = self._tenant.get((request.tenant, resource))
        if quota is None:
            return QuotaVerdict(False, reason=f"{label}: no quota for {request.tenant}")
        used = self.tenant_usage[(request.tenant, resource)]
        if used + need > quota.limit:
            return QuotaVerdict(
                False,
                reason=f"{label}: {amount_label(resource, used)} of {quota.limit} in use by"
                f" {request.tenant}, {amount_label(resource, need)} more requested",
            )
        project_quota = self._project.get((request.tenant, request.project, resource))
        if project_quota is not None:
            project_used = self.project_usage[(request.tenant, request.project, resource)]
            if project_used + need > project_quota.limit:
                return QuotaVerdict(
                    False,
                    reason=f"{label}: {amount_label(resource, project_used)} of"
                    f" {project_quota.limit} in use by {request.tenant}/{request.project},"
                    f" {amount_label(resource, need)} more requested",
                )
        if used + need <= quota.guarantee:
            return QuotaVerdict(allowed=True)
        if self._borrowing_fits(quota, used=used, need=need):
            return QuotaVerdict(allowed=True, borrowed=True)
        lenders = f"cohort {quota.cohort}'s unused guarantees and " if quota.cohort else ""
        return QuotaVerdict(
            False,
            reason=f"{label}: {amount_label(resource, used)} of {quota.guarantee} guaranteed in"
            f" use by {request.tenant}; nothing left to borrow ({lenders}the"
            f" {amount_label(resource, self.pool(resource))} no guarantee covers are lent out)",
            lent_out=True,
        )

    def _borrowing_fits(self, quota: Quota, *, used: int, need: int) -> bool:
        """Whether ``need`` more above ``used`` leaves the quota's lending group drawing no
        more than the shared pool has left."""
        resource = quota.resource
        group = (self._group(quota), resource)
        borrowed = self._group_borrowed[group] - self._borrowing(quota, used)
        borrowed += self._borrowing(quota, used + need)
        unused = self._group_unused[group] - self._unused(quota, used)
        unused += self._unused(quota, used + need)
        drawn = self._drawn[resource] - max(
            self._group_borrowed[group] - self._group_unused[group], 0
        )
        return drawn + max(borrowed - unused, 0) <= self.pool(resource)

    def standings(self) -> tuple[QuotaStanding, ...]:
        """Every tenant quota's borrowing as the ledger stands."""
        standings = []
        for (tenant, resource), quota in sorted(self._tenant.items()):
            unused_guarantee = max(quota.guarantee - self.tenant_usage[(tenant, resource)], 0)
            standings.append(
                QuotaStanding(
                    tenant=tenant,
                    resource=resource,
                    borrowed=self.borrowed(tenant=tenant, resource=resource),
                    borrowable=max(
                        self.headroom(tenant=tenant, resource=resource) - unused_guarantee, 0
                    ),
                )
            )
        return tuple(standings)

    def headroom(self, *, tenant: str, resource: str) -> int:
        """How much more of ``resource`` the tenant could hold now (its organization's quota,
        0 without one): up to its limit, its guarantee and then what is left to borrow."""
        quota = self._tenant.get((tenant, resource))
        if quota is None:
            return 0
        used = self.tenant_usage[(tenant, resource)]
        fits, above = 0, max(quota.limit - used, 0)
        # Whatever fits, less fits too: the most that does, by bisection.
        while fits < above:
            need = (fits + above + 1) // 2
            if used + need <= quota.guarantee or self._borrowing_fits(quota, used=used, need=need):
                fits = need
            else:
                above = need - 1
        return fits

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

    def is_borrowing(self, *, tenant: str, resource: str) -> bool:
        quota = self._tenant.get((tenant, resource))
        return quota is not None and self.tenant_usage[(tenant, resource)] > quota.guarantee

    def charge(self, *, request: Request, gpu_class: str, replicas: int, sign: int = 1) -> None:
        amount = sign * request.quota_amount * replicas
        resource = request.quota_resource(gpu_class)
        key = (request.tenant, resource)
        used = self.tenant_usage[key]
        self.tenant_usage[key] = used + amount
        self.project_usage[(request.tenant, request.project, resource)] += amount
        self.class_usage[(request.tenant, gpu_class)] += (
            sign * request.gpu_milli_per_replica * replicas
        )
        quota = self._tenant.get(key)
        if quota is None:
            return
        group = (self._group(quota), resource)
        drawn_before = max(self._group_borrowed[group] - self._group_unused[group], 0)
        self._group_borrowed[group] += self._borrowing(quota, used + amount)
        self._group_borrowed[group] -= self._borrowing(quota, used)
        self._group_unused[group] += self._unused(quota, used + amount) - self._unused(quota, used)
        drawn_after = max(self._group_borrowed[group] - self._group_unused[group], 0)
        self._drawn[resource] += drawn_after - drawn_before

    @staticmethod
    def _borrowing(quota: Quota, used: int) -> int:
        return max(used - quota.guarantee, 0)

    @staticmethod
    def _unused(quota: Quota, used: int) -> int:
        return max(quota.guarantee - used, 0)


def dominant_shares(*, ledger: QuotaLedger, nodes: Sequence[NodeState]) -> dict[str, float]:
    """DRF: each tenant's largest share of any GPU class's capacity, plus its decayed past
    usage share (``ClusterSnapshot.tenant_usage``), divided by its weight (the ledger's)."""
    capacity: dict[str, int] = defaultdict(int)
    for node in nodes:
        capacity[node.gpu_class] += len(node.gpu_free_milli) * MILLI_PER_GPU
    shares: dict[str, float] = defaultdict(float)
    for (tenant, gpu_class), used in ledger.class_usage.items():
        if capacity[gpu_class]:
            share = used / capacity[gpu_class] / ledger.weight(tenant)
            shares[tenant] = max(shares[tenant], share)
    for tenant, past in ledger.usage.items():
        shares[tenant] += past / ledger.weight(tenant)
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
    need = request.quota_amount * request.smallest_gang
    resources = {request.quota_resource(c): c for c in request.gpu_classes}
    # Pinned to a region, a request is held to the region's cap where its quota has one.
    limits = {
        q.resource: min(q.limit, dict(q.region_limits).get(request.region or "", q.limit))
        for q in quotas
        if q.tenant == request.tenant and q.project is None and q.resource in resources
    }
    if not any(need <= limit for limit in limits.values()):
        shown = ", ".join(f"{resource_label(r)}: {limits.get(r, 0)}" for r in resources)
        field = "gpus" if request.gpus else "gpu_milli" if request.gpu_milli else "mig_count"
        asked = f"{need} GPUs" if request.gpus else amount_label(next(iter(resources)), need)
        where = f" in {request.region}" if request.region else ""
        errors[field].append(
            f"{asked} asked, over the quota limit of {request.tenant}{where} ({shown})."
        )
    return dict(errors)


class LargerThanAnyNode:
    """``larger_than_any_node`` against one cycle's node shapes, worked out once per shape of
    replica: ten thousand waiting requests come in under a thousand. The errors returned are
    shared: read them only."""

    def __init__(self, nodes: Sequence[NodeState]) -> None:
        self._nodes = nodes
        self._errors: dict[tuple, dict[str, list[str]]] = {}

    def __call__(self, request: Request) -> dict[str, list[str]]:
        # Everything of the request larger_than_any_node reads.
        key = (
            request.gpu_classes,
            request.tolerations,
            request.gpus,
            request.gpu_milli,
            request.mig_profile,
            request.mig_count,
            request.cpu_milli,
            request.memory_mib,
        )
        errors = self._errors.get(key)
        if errors is None:
            errors = self._errors[key] = larger_than_any_node(request, self._nodes)
        return errors


def _untolerated(node: NodeState, request: Request) -> list[str]:
    """The hard taints of the node that the request does not tolerate, as key=value:effect."""
    blocking = [t for t in node.taints if t.effect in BLOCKING_EFFECTS]
    return [
        f"{t.key}={t.value}:{t.effect.value}" if t.value else f"{t.key}:{t.effect.value}"
        for t in untolerated_taints(taints=blocking, tolerations=request.tolerations)
    ]


def larger_than_any_node(request: Request, nodes: Sequence[NodeState]) -> dict[str, list[str]]:
    """Field errors for what no node could ever take: a replica for which every node that could
    run it (of an acceptable GPU class, or any node for CPU-only work) has a taint it does not
    tolerate, or of which it asks more of a resource than the largest of them has; none when
    no node is given."""
    errors: dict[str, list[str]] = defaultdict(list)
    if not nodes:
        return {}
    if request.needs_gpu:
        nodes = [n for n in nodes if n.gpu_class in request.gpu_classes]
    hosts = [n for n in nodes if not _untolerated(n, request)]
    if nodes and not hosts:
        taints = ", ".join(sorted({taint for n in nodes for taint in _untolerated(n, request)}))
        if request.needs_gpu:
            classes = " or ".join(request.gpu_classes)
            errors["gpu_classes"].append(
                f"No {classes} node of the cluster takes this work: every one is tainted {taints}."
            )
        else:
            errors["gpus"].append(
                "No node of the cluster takes work without GPUs: every node is tainted"
                f" {taints} (GPU work only). Ask for GPUs, or an operator for a CPU pool."
            )
        return dict(errors)
    nodes = hosts
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
