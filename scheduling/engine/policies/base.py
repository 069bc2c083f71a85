"""What every placement policy is: a scorer of candidate nodes, registered under its name."""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Self

import numpy as np

from ..free_capacity import ClusterState, Demand
from ..model import TaskType

MAX_SPEC_CPU_MILLI = 128_000  # the paper's normalisers: the biggest node it knew
MAX_SPEC_GPU_MILLI = 8_000
MAX_SCORE = 100

# Concrete policies by name, in the order they are defined.
_REGISTRY: dict[str, type[PlacementPolicy]] = {}


@dataclass(frozen=True)
class PolicyContext:
    """Everything a policy may be built from; each policy takes what it reads.

    ``workload``: FGD's target mix; ``rare_workload``: the types it leaves out
    (``fragmentation.rare_workload``).
    """

    seed: int = 0
    workload: Sequence[tuple[TaskType, float]] = ()
    rare_workload: Sequence[tuple[TaskType, float]] = ()


class PlacementPolicy(ABC):
    """Scores candidate nodes; the highest wins, then the smallest name (lowest index).

    A concrete subclass declares its ``name`` and is registered under it when defined;
    ``make_policy`` builds it by that name through ``from_context``.
    """

    name: ClassVar[str]

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if inspect.isabstract(cls):
            return
        if "name" not in cls.__dict__:
            raise TypeError(f"placement policy {cls.__name__} must declare its own name")
        if cls.name in _REGISTRY:
            raise TypeError(f"placement policy name {cls.name!r} is taken")
        _REGISTRY[cls.name] = cls

    @classmethod
    def from_context(cls, context: PolicyContext) -> Self:
        return cls()

    @abstractmethod
    def scores(
        self, *, cluster: ClusterState, candidates: np.ndarray, demand: Demand
    ) -> np.ndarray:
        """One number per candidate node; higher is better."""

    def choose_node(self, *, cluster: ClusterState, candidates: np.ndarray, demand: Demand) -> int:
        scores = self.scores(cluster=cluster, candidates=candidates, demand=demand)
        return int(candidates[int(np.argmax(scores))])

    def choose_gpus(self, *, cluster: ClusterState, node: int, demand: Demand) -> tuple[int, ...]:
        return cluster.best_fit_gpus(demand=demand, node=node)


def policy_names() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def make_policy(
    *,
    name: str,
    seed: int = 0,
    workload: Sequence[tuple[TaskType, float]] = (),
    rare_workload: Sequence[tuple[TaskType, float]] = (),
) -> PlacementPolicy:
    """The policy registered as ``name``, built from what ``PolicyContext`` describes."""
    policy = _REGISTRY.get(name)
    if policy is None:
        raise ValueError(f"unknown placement policy {name!r}; choose from {policy_names()}")
    context = PolicyContext(seed=seed, workload=workload, rare_workload=rare_workload)
    return policy.from_context(context)


def idle_gpu_milli(cluster: ClusterState, candidates: np.ndarray) -> np.ndarray:
    """Free milli-GPU of each candidate node."""
    return np.maximum(cluster.gpu_free[candidates], 0).sum(axis=1)
