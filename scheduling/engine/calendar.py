"""Capacity ahead: per pool and GPU class, the whole GPUs free, reserved and expected busy in
each hour of a span, and where a block of N GPUs on one node or one topology group (a rack)
is free for a whole window.

Running work ends when ``RunningWorkload.expected_end`` says (its start plus its max
runtime: the rule backfill and the Estimator plan by); work without one stays busy to the end
of the span. Reservations are counts in their pool, not nodes: a block fits when a node (or
group) has N idle GPUs and the pool, once what its reservations hold is set aside, still has
N free. MIG instances are not counted: a calendar is of whole GPUs, as reservations of them.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .model import MILLI_PER_GPU, NodeState, Reservation, RunningWorkload

HOUR = timedelta(hours=1)
NODE = "node"


@dataclass(frozen=True, eq=False)
class PoolCalendar:
    """One pool's hours from ``start``: each array has one entry per hour, and free +
    reserved + busy = ``schedulable`` in every one."""

    pool: str
    gpu_class: str
    start: datetime
    schedulable: int
    free: np.ndarray
    reserved: np.ndarray
    busy: np.ndarray
    # Per level (NODE or a topology key): idle GPUs of each node or group, one row each.
    idle_by_group: dict[str, np.ndarray] = field(repr=False)
    # The name of each row of ``idle_by_group``, per level.
    group_names: dict[str, list[str]] = field(repr=False)

    @property
    def hours(self) -> int:
        return len(self.free)

    def largest_block(self, level: str) -> np.ndarray:
        """Per hour, the most GPUs free together on one node (or group of ``level``)."""
        idle = self.idle_by_group[level]
        most = idle.max(axis=0) if len(idle) else np.zeros(self.hours, dtype=np.int64)
        return np.minimum(most, self.free)

    def block_fits(self, *, gpus: int, level: str, length: int) -> np.ndarray:
        """Per start hour (those whose window of ``length`` hours ends within the span),
        whether ``gpus`` GPUs on one node (or group) are free for the whole window. A GPU
        only ever becomes idle as the span goes on (running work ends, none starts), so a
        group idle enough at the window's start stays so to its end."""
        if length > self.hours:
            return np.zeros(0, dtype=bool)
        idle = self.idle_by_group[level]
        fits_in_group = (
            idle.max(axis=0)[: self.hours - length + 1] >= gpus
            if len(idle)
            else np.zeros(self.hours - length + 1, dtype=bool)
        )
        pool_free = sliding_window_view(self.free, length).min(axis=1) >= gpus
        return fits_in_group & pool_free


@dataclass(frozen=True)
class BlockWindow:
    """A window of a pool where the asked block is free throughout."""

    pool: str
    gpu_class: str
    starts_at: datetime
    ends_at: datetime


def capacity_calendar(
    *,
    nodes: Sequence[NodeState],
    running: Iterable[RunningWorkload],
    reservations: Iterable[Reservation],
    start: datetime,
    hours: int,
    levels: Sequence[str] = (),
) -> list[PoolCalendar]:
    """The calendar of each (pool, GPU class) of the schedulable (uncordoned) GPU nodes, by
    name, over ``hours`` hours from ``start``; ``levels``: topology keys to group nodes by,
    besides NODE (a node without the label is a group of its own)."""
    schedulable = sorted(
        (n for n in nodes if not n.cordoned and n.gpu_class and n.gpu_free_milli),
        key=lambda n: n.name,
    )
    busy_until = _busy_hours(schedulable, running, start=start, hours=hours)
    held = _reserved_hours(reservations, start=start, hours=hours)
    members: dict[tuple[str, str], list[int]] = defaultdict(list)
    for index, node in enumerate(schedulable):
        members[(node.pool, node.gpu_class)].append(index)
    calendars = []
    for (pool, gpu_class), indices in sorted(members.items()):
        idle = np.stack([_idle_hours(busy_until[i], hours) for i in indices])
        capacity = sum(len(schedulable[i].gpu_free_milli) for i in indices)
        busy = capacity - idle.sum(axis=0)
        reserved = np.minimum(
            held.get((pool, gpu_class), np.zeros(hours, np.int64)), capacity - busy
        )
        groups = {NODE: idle}
        names = {NODE: [schedulable[i].name for i in indices]}
        for level in levels:
            groups[level], names[level] = _grouped(idle, [schedulable[i] for i in indices], level)
        calendars.append(
            PoolCalendar(
                pool=pool,
                gpu_class=gpu_class,
                start=start,
                schedulable=capacity,
                free=capacity - busy - reserved,
                reserved=reserved,
                busy=busy,
                idle_by_group=groups,
                group_names=names,
            )
        )
    return calendars


def earliest_windows(
    calendars: Iterable[PoolCalendar], *, gpus: int, level: str, length: int, count: int
) -> list[BlockWindow]:
    """The ``count`` earliest windows of ``length`` hours where ``gpus`` GPUs on one node (or
    group of ``level``) are free throughout: in each pool, the first start of every run of
    starts that fit (the next hour of a run is no news), the soonest first."""
    windows = []
    for calendar in calendars:
        fits = calendar.block_fits(gpus=gpus, level=level, length=length)
        run_starts = np.flatnonzero(fits & ~np.concatenate(([False], fits[:-1])))
        for hour in run_starts[:count].tolist():
            starts_at = calendar.start + hour * HOUR
            windows.append(
                BlockWindow(calendar.pool, calendar.gpu_class, starts_at, starts_at + length * HOUR)
            )
    windows.sort(key=lambda w: (w.starts_at, w.pool))
    return windows[:count]


def hours_until(instant: datetime | None, *, start: datetime, hours: int) -> int:
    """How many hours from ``start`` have begun before ``instant`` (None: all of them), within
    [0, hours]: an hour counts when any part of it is before ``instant``."""
    if instant is None:
        return hours
    return min(max(math.ceil((instant - start) / HOUR), 0), hours)


def _busy_hours(
    nodes: Sequence[NodeState], running: Iterable[RunningWorkload], *, start: datetime, hours: int
) -> list[np.ndarray]:
    """Per node, per GPU, the hours from ``start`` it stays busy: 0 for an idle GPU, until
    the latest expected end of the work on it otherwise (the whole span for a GPU in use by
    work with no expected end, or by none the snapshot names)."""
    index = {node.name: i for i, node in enumerate(nodes)}
    until = [
        np.where(np.array(node.gpu_free_milli) >= MILLI_PER_GPU, 0, -1).astype(np.int64)
        for node in nodes
    ]
    ends: dict[tuple[int, int], int] = {}
    for workload in running:
        end = hours_until(workload.expected_end, start=start, hours=hours)
        for placement in workload.placements:
            node = index.get(placement.node)
            if node is None:
                continue
            for gpu in placement.gpu_indices:
                key = (node, gpu)
                ends[key] = max(ends.get(key, 0), end)
    for (node, gpu), end in ends.items():
        if gpu < len(until[node]) and until[node][gpu] != 0:
            until[node][gpu] = end
    return [np.where(gpus < 0, hours, gpus) for gpus in until]


def _idle_hours(busy_until: np.ndarray, hours: int) -> np.ndarray:
    """Per hour, how many of a node's GPUs are idle: those whose busy hours are over."""
    ended = np.bincount(busy_until, minlength=hours + 1)[:hours]
    return np.cumsum(ended)


def _reserved_hours(
    reservations: Iterable[Reservation], *, start: datetime, hours: int
) -> dict[tuple[str, str], np.ndarray]:
    """Per (pool, class), whole GPUs reservations hold in each hour: all that overlap any part
    of it (more than at any one instant of it when one ends and another starts inside it)."""
    changes: dict[tuple[str, str], np.ndarray] = defaultdict(
        lambda: np.zeros(hours + 1, dtype=np.int64)
    )
    for reservation in reservations:
        if reservation.mig_profile:
            continue
        first = min(max(math.floor((reservation.starts_at - start) / HOUR), 0), hours)
        last = hours_until(reservation.ends_at, start=start, hours=hours)
        if first < last:
            delta = changes[(reservation.pool, reservation.gpu_class)]
            delta[first] += reservation.gpus
            delta[last] -= reservation.gpus
    return {key: np.cumsum(delta)[:hours] for key, delta in changes.items()}


def _grouped(
    idle: np.ndarray, nodes: Sequence[NodeState], level: str
) -> tuple[np.ndarray, list[str]]:
    """Idle GPUs per hour of each group of nodes sharing a value of the ``level`` topology
    label (a node without it alone)."""
    keys = [node.topology.get(level) or f"{NODE}:{node.name}" for node in nodes]
    names = sorted(set(keys))
    position = {name: i for i, name in enumerate(names)}
    rows = np.zeros((len(names), idle.shape[1]), dtype=np.int64)
    np.add.at(rows, [position[k] for k in keys], idle)
    return rows, names
