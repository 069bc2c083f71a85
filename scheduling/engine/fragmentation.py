"""GPU fragmentation as defined by the FGD paper (Weng et al., USENIX ATC'23).

For a node n and a task type m, F_n(m) is the free GPU milli of n that m cannot use: all of
it when m cannot run on n at all (CPU, GPU count, per-GPU share, class) or m is CPU-only,
otherwise the free milli of the GPUs whose free share is below m's per-GPU request. Against a
workload mix M of task types with popularity p_m, F_n(M) = sum_m p_m F_n(m).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import accumulate

import numpy as np

from .free_capacity import ClusterState
from .model import TaskType

TYPICAL_COVERAGE = 0.95


def typical_workload(
    tasks: Iterable[TaskType], *, coverage: float = TYPICAL_COVERAGE
) -> tuple[tuple[TaskType, float], ...]:
    """The most popular task types that together cover ``coverage`` of all tasks, with their
    popularity renormalised to sum to one (ties: the larger type first, as the paper's tool).
    ``tasks``: every task, or a Counter of them."""
    counts = tasks if isinstance(tasks, Counter) else Counter(tasks)
    total = sum(counts.values())
    if not total:
        return ()
    ranked = sorted(
        counts.items(),
        key=lambda item: (
            item[1],
            item[0].cpu_milli,
            item[0].gpu_milli,
            item[0].gpus,
            sorted(item[0].gpu_classes or ()),
        ),
        reverse=True,
    )
    chosen: list[tuple[TaskType, int]] = []
    covered = 0
    for task, count in ranked:
        if covered >= coverage * total:
            break
        chosen.append((task, count))
        covered += count
    return tuple((task, count / covered) for task, count in chosen)


def rare_workload(
    tasks: Iterable[TaskType], *, coverage: float = TYPICAL_COVERAGE
) -> tuple[tuple[TaskType, float], ...]:
    """The task types ``typical_workload`` leaves out, each with its share of all tasks."""
    counts = tasks if isinstance(tasks, Counter) else Counter(tasks)
    total = sum(counts.values())
    typical = {task for task, _ in typical_workload(counts, coverage=coverage)}
    return tuple((task, count / total) for task, count in counts.items() if task not in typical)


class FragmentationModel:
    """Memoised F(state) for node states ``(class id, free CPU, sorted free GPU milli)``."""

    def __init__(
        self, *, workload: Sequence[tuple[TaskType, float]], class_names: Sequence[str]
    ) -> None:
        self._types = [
            (
                weight,
                task.cpu_milli,
                task.gpus,
                task.gpu_milli if task.gpus else 0,
                None
                if task.gpu_classes is None
                else frozenset(i for i, name in enumerate(class_names) if name in task.gpu_classes),
            )
            for task, weight in workload
        ]
        self._memo: dict[tuple[int, int, tuple[int, ...]], float] = {}

    def fragmentation(self, state: tuple[int, int, tuple[int, ...]]) -> float:
        """F_n(M) in milli-GPU; ``state[2]`` must be sorted ascending."""
        cached = self._memo.get(state)
        if cached is not None:
            return cached
        class_id, cpu_free, frees = state
        below = [0, *accumulate(frees)]
        idle = below[-1]
        frag = 0.0
        if idle:
            for weight, cpu, gpus, milli, classes in self._types:
                if not milli or cpu_free < cpu or (classes is not None and class_id not in classes):
                    frag += weight * idle
                    continue
                split = bisect_left(frees, milli)
                frag += weight * (idle if len(frees) - split < gpus else below[split])
        self._memo[state] = frag
        return frag


def cluster_fragmentation(*, cluster: ClusterState, model: FragmentationModel) -> tuple[float, int]:
    """(fragmented milli-GPU, idle milli-GPU) over the whole cluster."""
    states, counts = np.unique(cluster.state_id, return_counts=True)
    frag = sum(
        model.fragmentation(cluster.state_keys[s]) * int(c)
        for s, c in zip(states, counts, strict=True)
    )
    return frag, cluster.idle_gpu_milli()
