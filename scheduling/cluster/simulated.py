"""The simulated cluster: the embedded default, the demo's cluster and most tests'.

Nodes come from a cluster description file; objects the portal applies are kept in the
database; workloads "run" on the portal's clock (`portal.clock`), which tests advance.
Environment variables of a workload's container steer the simulation:
`SIMULATED_RUNTIME_SECONDS` (how long a job runs before it succeeds, default 300),
`SIMULATED_EXIT` (`fail` to make it fail), `SIMULATED_GPU_UTIL` (0-1, default 0.8),
`SIMULATED_GPU_MEMORY` (the fraction of GPU memory used, 0-1, default 0.5).
`latency_seconds` makes every object write take that long, as a loaded API server does.
"""

import time
from collections.abc import Collection, Mapping
from pathlib import Path

from django.db import transaction

from portal import clock
from scheduling.models import SimulatedNodeState, SimulatedObject

from .base import ClusterError
from .checks import manifest_problems
from .description import cluster_description_load
from .specs import GpuReading, NodeInventory, Phase, TaintSpec, WorkloadStatus

DEFAULT_RUNTIME_SECONDS = 300
STARTUP_SECONDS = 5
DEFAULT_GPU_UTIL = 0.8
DEFAULT_GPU_MEMORY = 0.5


def _pod_spec(manifest: dict) -> dict:
    kind = manifest["kind"]
    if kind == "Pod":
        return manifest["spec"]
    return manifest["spec"]["template"]["spec"]


def _container_env(manifest: dict) -> dict[str, str]:
    container = _pod_spec(manifest)["containers"][0]
    return {item["name"]: item.get("value", "") for item in container.get("env", [])}


def _affinity_nodes(manifest: dict) -> tuple[str, ...]:
    affinity = _pod_spec(manifest).get("affinity", {}).get("nodeAffinity", {})
    terms = affinity.get("requiredDuringSchedulingIgnoredDuringExecution", {})
    nodes: list[str] = []
    for term in terms.get("nodeSelectorTerms", []):
        for expression in term.get("matchExpressions", []):
            if expression["key"] == "kubernetes.io/hostname" and expression["operator"] == "In":
                nodes.extend(expression["values"])
    return tuple(nodes)


class SimulatedBackend:
    def __init__(self, *, description_path: Path, latency_seconds: float = 0.0) -> None:
        self.description_path = Path(description_path)
        self.latency_seconds = latency_seconds

    def list_nodes(self) -> list[NodeInventory]:
        states = {state.name: state for state in SimulatedNodeState.objects.all()}
        nodes = []
        for node in cluster_description_load(self.description_path).nodes:
            state = states.get(node.name)
            if state is None:
                nodes.append(node)
                continue
            nodes.append(
                NodeInventory(
                    name=node.name,
                    labels={**node.labels, **state.labels},
                    allocatable=node.allocatable,
                    taints=tuple(TaintSpec(**taint) for taint in state.taints),
                    ready=not state.failed,
                )
            )
        return nodes

    def apply(self, manifest: dict) -> dict:
        problems = manifest_problems(manifest)
        if problems:
            raise ClusterError("; ".join(problems), status=422)
        time.sleep(self.latency_seconds)
        metadata = manifest["metadata"]
        with transaction.atomic():
            stored, created = SimulatedObject.objects.select_for_update().get_or_create(
                kind=manifest["kind"],
                namespace=metadata.get("namespace", ""),
                name=metadata["name"],
                defaults={
                    "api_version": manifest["apiVersion"],
                    "manifest": manifest,
                    "created_at": clock.now(),
                },
            )
            if not created and stored.manifest != manifest:
                stored.manifest = manifest
                stored.save(update_fields=["manifest"])
        return stored.manifest

    def delete(self, *, api_version: str, kind: str, name: str, namespace: str | None) -> None:
        SimulatedObject.objects.filter(kind=kind, namespace=namespace or "", name=name).delete()

    def label_node(
        self, *, name: str, labels: dict[str, str], taints: tuple[TaintSpec, ...]
    ) -> None:
        state, _ = SimulatedNodeState.objects.get_or_create(name=name)
        state.labels = {**state.labels, **labels}
        state.taints = [taint.as_dict() for taint in taints]
        state.save(update_fields=["labels", "taints"])

    def workload_statuses(
        self, *, namespace: str, workloads: Mapping[str, str]
    ) -> dict[str, WorkloadStatus]:
        stored = {
            (item.kind, item.name): item
            for item in SimulatedObject.objects.filter(namespace=namespace, name__in=workloads)
        }
        failed = set(SimulatedNodeState.objects.filter(failed=True).values_list("name", flat=True))
        now = clock.now()
        return {
            name: self._status(stored.get((kind, name)), failed=failed, now=now)
            for name, kind in workloads.items()
        }

    def _status(self, stored: SimulatedObject | None, *, failed: set[str], now) -> WorkloadStatus:
        if stored is None:
            return WorkloadStatus(phase=Phase.MISSING)
        nodes = _affinity_nodes(stored.manifest)
        lost = sorted(failed.intersection(nodes))
        if lost:
            return WorkloadStatus.node_lost(lost, what="stopped responding", nodes=nodes)
        elapsed = (now - stored.created_at).total_seconds()
        if elapsed < STARTUP_SECONDS:
            return WorkloadStatus(phase=Phase.PENDING, nodes=nodes)
        replicas = stored.manifest["spec"].get("replicas") or stored.manifest["spec"].get(
            "parallelism", 1
        )
        if stored.kind != "Job":
            return WorkloadStatus(phase=Phase.RUNNING, ready_replicas=replicas, nodes=nodes)
        return self._job_status(stored, elapsed=elapsed, replicas=replicas, nodes=nodes)

    def _job_status(self, stored, *, elapsed: float, replicas: int, nodes) -> WorkloadStatus:
        env = _container_env(stored.manifest)
        deadline = stored.manifest["spec"].get("activeDeadlineSeconds")
        runtime = float(env.get("SIMULATED_RUNTIME_SECONDS", DEFAULT_RUNTIME_SECONDS))
        if deadline is not None and elapsed >= deadline and runtime > deadline:
            return WorkloadStatus(
                phase=Phase.FAILED,
                reason="DeadlineExceeded",
                message=f"Job was active longer than specified deadline ({deadline} s).",
                nodes=nodes,
            )
        if elapsed < STARTUP_SECONDS + runtime:
            return WorkloadStatus(phase=Phase.RUNNING, ready_replicas=replicas, nodes=nodes)
        if env.get("SIMULATED_EXIT") == "fail":
            return WorkloadStatus(
                phase=Phase.FAILED,
                reason="BackoffLimitExceeded",
                message="Job has reached the specified backoff limit.",
                nodes=nodes,
            )
        return WorkloadStatus(phase=Phase.SUCCEEDED, nodes=nodes)

    def gpu_readings(
        self, *, workloads: Mapping[str, Collection[str]]
    ) -> dict[tuple[str, str], GpuReading]:
        names = {name for named in workloads.values() for name in named}
        stored = SimulatedObject.objects.filter(
            namespace__in=list(workloads), name__in=names, kind__in=("Job", "Deployment", "Pod")
        )
        readings = {}
        for found in stored:
            if found.name in workloads[found.namespace]:
                env = _container_env(found.manifest)
                readings[(found.namespace, found.name)] = GpuReading(
                    utilization=float(env.get("SIMULATED_GPU_UTIL", DEFAULT_GPU_UTIL)),
                    memory_used=float(env.get("SIMULATED_GPU_MEMORY", DEFAULT_GPU_MEMORY)),
                )
        return readings

    # Failure injection, for tests and the demo.

    def node_fail(self, *, name: str) -> None:
        SimulatedNodeState.objects.update_or_create(name=name, defaults={"failed": True})

    def node_recover(self, *, name: str) -> None:
        SimulatedNodeState.objects.filter(name=name).update(failed=False)
