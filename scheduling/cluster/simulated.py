"""The simulated cluster: the embedded default, the demo's cluster and most tests'.

Nodes come from a cluster description file (of one of its clusters, or of all of them); the
objects the portal applies and what it does to nodes are kept in a `SimulatorStore` the app
passes in (its database, so that the web process and the workers see the same cluster, each
cluster's store its own); workloads "run" on the clock passed in as `now`, which
tests advance.
Environment variables of a workload's container steer the simulation:
`SIMULATED_RUNTIME_SECONDS` (how long a job runs before it succeeds, default 300),
`SIMULATED_EXIT` (`fail` to make it fail), `SIMULATED_GPU_UTIL` (0-1, default 0.8),
`SIMULATED_GPU_MEMORY` (the fraction of GPU memory used, 0-1, default 0.5).
`latency_seconds` makes every object write take that long, as a loaded API server does.
Workloads write logs (`simulated_logs.py`) from their manifest and the time alone.

Deleting a workload whose pods run is graceful, as in Kubernetes: the object stays, marked
`metadata.deletionTimestamp` (when its pods are gone: its pods' `terminationGracePeriodSeconds`
from the deletion, Kubernetes' 30 when they set none), and its pods keep their GPUs until
then. New pods on the same nodes start once the GPUs they need are free: the simulator knows
each pod's node (the object's node affinity; a gang's replicas spread over them) but not which
GPUs it holds, so it counts GPUs per node.
"""

import copy
import math
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Protocol

from .base import ClusterError
from .checks import manifest_problems
from .description import cluster_description_load
from .simulated_logs import SimulatedRun, simulated_lines
from .specs import GpuReading, LogLine, NodeInventory, Phase, TaintSpec, WorkloadStatus

DEFAULT_RUNTIME_SECONDS = 300
STARTUP_SECONDS = 5
DEFAULT_GPU_UTIL = 0.8
DEFAULT_GPU_MEMORY = 0.5
# How often a follower of the logs looks for new lines (real seconds).
FOLLOW_POLL_SECONDS = 1.0
# Kubernetes' terminationGracePeriodSeconds for a pod that sets none.
DEFAULT_GRACE_SECONDS = 30
# The kinds of object whose pods hold GPUs.
POD_KINDS = ("Job", "Deployment", "Pod")


@dataclass(frozen=True)
class StoredObject:
    """An object the portal applied, as the simulator keeps it."""

    kind: str
    namespace: str  # "" for a cluster-wide object
    name: str
    manifest: dict
    created_at: datetime


@dataclass(frozen=True)
class StoredNode:
    """What the portal did to a node of the description: its labels and taints, and whether
    it was failed."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[TaintSpec, ...] = ()
    failed: bool = False


class SimulatorStore(Protocol):
    """Where the simulated cluster keeps its objects and its nodes' states."""

    def objects(
        self,
        *,
        namespaces: Collection[str],
        names: Collection[str],
        kinds: Collection[str] | None = None,
    ) -> list[StoredObject]:
        """The stored objects of these namespaces with these names (and kinds, if given)."""
        ...

    def object_put(
        self,
        *,
        api_version: str,
        kind: str,
        namespace: str,
        name: str,
        manifest: dict,
        created_at: datetime,
    ) -> dict:
        """Store the object atomically: a new one as created at `created_at`, an existing one
        takes the manifest and keeps its creation time. The stored manifest."""
        ...

    def object_delete(self, *, kind: str, namespace: str, name: str) -> None:
        """Forget the object; one never stored is fine."""
        ...

    def objects_of_kinds(
        self, *, kinds: Collection[str], terminating: bool = False
    ) -> list[StoredObject]:
        """Every stored object of these kinds, in every namespace; with `terminating`, only
        those marked `metadata.deletionTimestamp`."""
        ...

    def node_states(self, *, names: Collection[str] | None = None) -> dict[str, StoredNode]:
        """The state of every node the portal did something to (of these names, if given),
        by name."""
        ...

    def node_state_update(
        self,
        *,
        name: str,
        labels: Mapping[str, str] | None = None,
        taints: tuple[TaintSpec, ...] | None = None,
        failed: bool | None = None,
    ) -> None:
        """Set what is given (not None) of the node's state, creating the state if the node
        has none."""
        ...

    def answering(self) -> bool:
        """Whether the cluster answers (it does unless an operator switched it off)."""
        ...


def _pod_spec(manifest: dict) -> dict:
    kind = manifest["kind"]
    if kind == "Pod":
        return manifest["spec"]
    return manifest["spec"]["template"]["spec"]


def _container_env(manifest: dict) -> dict[str, str]:
    container = _pod_spec(manifest)["containers"][0]
    return {item["name"]: item.get("value", "") for item in container.get("env", [])}


def _replicas(manifest: dict) -> int:
    return manifest["spec"].get("replicas") or manifest["spec"].get("parallelism", 1)


def _gpu_limits(manifest: dict) -> dict[str, int]:
    """The GPU resources (whole GPUs, MIG instances, shares) one of its pods asks for."""
    limits = _pod_spec(manifest)["containers"][0]["resources"].get("limits", {})
    return {key: int(count) for key, count in limits.items() if key.startswith("nvidia.com/")}


def _gpus_by_node(manifest: dict) -> dict[str, Counter]:
    """The GPU resources its pods hold on each of its nodes, its replicas spread evenly over
    them (rounded up: a node never seems to hold fewer than it may)."""
    if manifest["kind"] not in POD_KINDS:
        return {}
    nodes, per_pod = affinity_nodes(manifest), _gpu_limits(manifest)
    if not nodes or not per_pod:
        return {}
    pods = math.ceil(_replicas(manifest) / len(nodes))
    return {node: Counter({key: count * pods for key, count in per_pod.items()}) for node in nodes}


def gone_at(stored: StoredObject) -> datetime | None:
    """When a terminating object's pods are gone (None: it is not terminating)."""
    deletion = stored.manifest["metadata"].get("deletionTimestamp")
    return datetime.fromisoformat(deletion) if deletion else None


def _simulated_run(stored: StoredObject) -> SimulatedRun:
    """What a stored workload object's containers do, for its logs."""
    env = _container_env(stored.manifest)
    runtime = float(env.get("SIMULATED_RUNTIME_SECONDS", DEFAULT_RUNTIME_SECONDS))
    deadline = stored.manifest["spec"].get("activeDeadlineSeconds")
    is_job = stored.kind == "Job"
    killed = is_job and deadline is not None and runtime > deadline
    end = None
    if is_job:
        end = max(deadline - STARTUP_SECONDS, 0) if killed else runtime
    return SimulatedRun(
        name=stored.name,
        kind=stored.kind,
        replicas=_replicas(stored.manifest),
        gpus=sum(_gpu_limits(stored.manifest).values()),
        started=stored.created_at + timedelta(seconds=STARTUP_SECONDS),
        end=end,
        fails=env.get("SIMULATED_EXIT") == "fail",
        killed=killed,
        gpu_memory=float(env.get("SIMULATED_GPU_MEMORY", DEFAULT_GPU_MEMORY)),
        runtime=runtime,
    )


def affinity_nodes(manifest: dict) -> tuple[str, ...]:
    affinity = _pod_spec(manifest).get("affinity", {}).get("nodeAffinity", {})
    terms = affinity.get("requiredDuringSchedulingIgnoredDuringExecution", {})
    nodes: list[str] = []
    for term in terms.get("nodeSelectorTerms", []):
        for expression in term.get("matchExpressions", []):
            if expression["key"] == "kubernetes.io/hostname" and expression["operator"] == "In":
                nodes.extend(expression["values"])
    return tuple(nodes)


class SimulatedBackend:
    def __init__(
        self,
        *,
        description_path: Path,
        store: SimulatorStore,
        cluster: str | None = None,
        now: Callable[[], datetime],
        latency_seconds: float = 0.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.description_path = Path(description_path)
        self.store = store
        self.cluster = cluster  # one cluster of the description; None: all of them as one
        self.now = now
        self.latency_seconds = latency_seconds
        self.sleep = sleep

    def list_nodes(self) -> list[NodeInventory]:
        self._answer()
        states = self.store.node_states()
        nodes = []
        for node in cluster_description_load(self.description_path).nodes_of(self.cluster):
            state = states.get(node.name)
            if state is None:
                nodes.append(node)
                continue
            nodes.append(
                NodeInventory(
                    name=node.name,
                    labels={**node.labels, **state.labels},
                    allocatable=node.allocatable,
                    taints=state.taints,
                    ready=not state.failed,
                )
            )
        return nodes

    def apply(self, manifest: dict) -> dict:
        self._answer()
        problems = manifest_problems(manifest)
        if problems:
            raise ClusterError("; ".join(problems), status=422)
        time.sleep(self.latency_seconds)
        metadata, now = manifest["metadata"], self.now()
        key = {
            "kind": manifest["kind"],
            "namespace": metadata.get("namespace", ""),
            "name": metadata["name"],
        }
        existing = self.stored(**key)
        if existing is not None and (gone := gone_at(existing)) is not None:
            if gone > now:
                raise ClusterError(
                    f"{key['kind']} {key['namespace']}/{key['name']} is being deleted: its pods"
                    f" terminate until {gone:%H:%M:%S} UTC.",
                    status=409,
                    retryable=True,
                )
            self.store.object_delete(**key)
            existing = None
        return self.store.object_put(
            api_version=manifest["apiVersion"],
            **key,
            manifest=manifest,
            # Its pods start once the GPUs they need on their nodes are free.
            created_at=now if existing else self._pods_start_at(manifest, now=now),
        )

    def _holding(
        self, *, now: datetime, terminating: bool = False
    ) -> list[tuple[datetime | None, dict[str, Counter]]]:
        """What every object's pods (with `terminating`, only the terminating ones') hold on
        each node, with when they go (None: they are not terminating). The objects whose pods
        are gone are forgotten on the way."""
        holding = []
        for stored in self.store.objects_of_kinds(kinds=POD_KINDS, terminating=terminating):
            gone = gone_at(stored)
            if gone is not None and gone <= now:
                self.store.object_delete(
                    kind=stored.kind, namespace=stored.namespace, name=stored.name
                )
            else:
                holding.append((gone, _gpus_by_node(stored.manifest)))
        return holding

    def _pods_start_at(self, manifest: dict, *, now: datetime) -> datetime:
        """When a new object's pods get the GPUs they ask for: now, or when the terminating
        pods that hold them on one of its nodes are gone."""
        wanted = _gpus_by_node(manifest)
        if not wanted:
            return now
        # Only terminating pods can delay a start: the running ones are read (every object
        # of the cluster, thousands in a burst) only when one of those shares a node with it.
        leaving = self._holding(now=now, terminating=True)
        if not any(gone and set(gpus) & set(wanted) for gone, gpus in leaving):
            return now
        held = self._holding(now=now)
        allocatable = {
            node.name: node.allocatable
            for node in cluster_description_load(self.description_path).nodes
        }
        start = now
        for node, asks in wanted.items():
            on_node = [(gone, gpus[node]) for gone, gpus in held if node in gpus]
            leaving = [gone for gone, _ in on_node if gone]
            in_use = sum((gpus for _, gpus in on_node), Counter())
            free = {key: int(allocatable.get(node, {}).get(key, 0)) - in_use[key] for key in asks}
            if leaving and any(free[key] < count for key, count in asks.items()):
                start = max(start, *leaving)
        return start

    def delete(self, *, api_version: str, kind: str, name: str, namespace: str | None) -> None:
        """Gracefully, as Kubernetes deletes: an object whose pods run and hold GPUs stays,
        terminating, for their grace period; anything else goes at once."""
        self._answer()
        key = {"kind": kind, "namespace": namespace or "", "name": name}
        stored, now = self.stored(**key), self.now()
        if stored is None:
            return
        gone = gone_at(stored)
        if gone is not None:
            # Deleted again while terminating: the first deletion's deadline holds.
            if gone <= now:
                self.store.object_delete(**key)
            return
        if not _gpus_by_node(stored.manifest):
            self.store.object_delete(**key)
            return
        grace = int(
            _pod_spec(stored.manifest).get("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS)
        )
        failed = {state.name for state in self.store.node_states().values() if state.failed}
        if not grace or self._status(stored, failed=failed, now=now).phase != Phase.RUNNING:
            self.store.object_delete(**key)
            return
        manifest = copy.deepcopy(stored.manifest)
        manifest["metadata"]["deletionTimestamp"] = (now + timedelta(seconds=grace)).isoformat()
        manifest["metadata"]["deletionGracePeriodSeconds"] = grace
        self.store.object_put(
            api_version=manifest["apiVersion"],
            **key,
            manifest=manifest,
            created_at=stored.created_at,
        )

    def label_node(
        self, *, name: str, labels: dict[str, str], taints: tuple[TaintSpec, ...]
    ) -> None:
        self._answer()
        state = self.store.node_states(names=[name]).get(name, StoredNode(name=name))
        self.store.node_state_update(name=name, labels={**state.labels, **labels}, taints=taints)

    def workload_statuses(
        self, *, namespace: str, workloads: Mapping[str, str]
    ) -> dict[str, WorkloadStatus]:
        self._answer()
        stored = {
            (item.kind, item.name): item
            for item in self.store.objects(namespaces=[namespace], names=list(workloads))
        }
        failed = {state.name for state in self.store.node_states().values() if state.failed}
        now = self.now()
        return {
            name: self._status(stored.get((kind, name)), failed=failed, now=now)
            for name, kind in workloads.items()
        }

    def _status(
        self, stored: StoredObject | None, *, failed: set[str], now: datetime
    ) -> WorkloadStatus:
        if stored is None or ((gone := gone_at(stored)) is not None and gone <= now):
            return WorkloadStatus(phase=Phase.MISSING)
        nodes = affinity_nodes(stored.manifest)
        lost = sorted(failed.intersection(nodes))
        if lost:
            return WorkloadStatus.node_lost(lost, what="stopped responding", nodes=nodes)
        if stored.created_at > now:
            return WorkloadStatus(
                phase=Phase.PENDING,
                reason="WaitingForGPUs",
                message=f"Terminating pods hold the GPUs it needs until"
                f" {stored.created_at:%H:%M:%S} UTC.",
                nodes=nodes,
            )
        elapsed = (now - stored.created_at).total_seconds()
        if elapsed < STARTUP_SECONDS:
            return WorkloadStatus(phase=Phase.PENDING, nodes=nodes)
        replicas = _replicas(stored.manifest)
        if stored.kind != "Job":
            return WorkloadStatus(phase=Phase.RUNNING, ready_replicas=replicas, nodes=nodes)
        return self._job_status(stored, elapsed=elapsed, replicas=replicas, nodes=nodes)

    def _job_status(
        self, stored: StoredObject, *, elapsed: float, replicas: int, nodes
    ) -> WorkloadStatus:
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
        self._answer()
        names = {name for named in workloads.values() for name in named}
        stored = self.store.objects(
            namespaces=list(workloads), names=names, kinds=("Job", "Deployment", "Pod")
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

    def stored(self, *, namespace: str, name: str, kind: str) -> StoredObject | None:
        found = self.store.objects(namespaces=[namespace], names=[name], kinds=[kind])
        return found[0] if found else None

    def logs(
        self,
        *,
        namespace: str,
        name: str,
        kind: str,
        replica: int | None = None,
        tail: int | None = None,
        since: datetime | None = None,
        keep_following: Callable[[], bool] | None = None,
    ) -> Iterator[LogLine]:
        self._answer()
        stored = self.stored(namespace=namespace, name=name, kind=kind)
        if stored is None:
            return
        run = _simulated_run(stored)
        replicas = range(run.replicas) if replica is None else [replica]
        read = self.now()
        yield from simulated_lines(run, replicas=replicas, until=read, since=since, tail=tail)
        while keep_following is not None and not run.ended_by(read) and keep_following():
            self.sleep(FOLLOW_POLL_SECONDS)
            stored = self.stored(namespace=namespace, name=name, kind=kind)
            if stored is None or gone_at(stored) is not None:
                return  # deleted: cancelled, evicted, or ended and torn down
            previous, read = read, self.now()
            yield from simulated_lines(run, replicas=replicas, until=read, after=previous)

    # Failure injection, for tests and the demo.

    def _answer(self) -> None:
        """Every call to the cluster fails, as to a cluster that stopped answering, while it
        is switched off."""
        if not self.store.answering():
            raise ClusterError(
                f"Cluster {self.cluster or 'simulated'} does not answer (switched off).",
                retryable=True,
            )

    def node_fail(self, *, name: str) -> None:
        self.store.node_state_update(name=name, failed=True)

    def node_recover(self, *, name: str) -> None:
        if name in self.store.node_states(names=[name]):  # only a node with a state can have failed
            self.store.node_state_update(name=name, failed=False)
