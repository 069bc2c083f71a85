"""The cheapest set of running workloads to evict so that a pending gang fits.

The cost of a victim set, compared lexicographically (lower is cheaper):

1. the highest tier among the victims;
2. the work lost: the victims' GPU amount (milli-GPU) times how long each has run since its
   last checkpoint (reported, or due by its declared interval; none: since it started),
   summed (in milli-GPU x microseconds: integers, so sums are exact whatever the order);
3. the number of victims.

Ties. Every candidate has a canonical rank, by ``eviction_cost``: tier, then work lost, then
what it holds (its placements: node, GPU indices, shares, CPU, memory), then its start time
and the reason it may be evicted. Of two equally cheap sets, the one whose victims' ranks,
each listed from lowest to highest, come first compared rank by rank wins. Ids, tenants and
projects never enter: relabelled workloads are chosen the same way. Only candidates equal in
everything but their names keep the order they were given in, and either is the same choice.

The search. A set can only succeed if the gang's minimum fits in free capacity, a sum over
nodes that only grows with more victims, so it is computed per group of candidates sharing
nodes (a few numpy calls per group and subset, remembered) rather than by trying placements.
Up to ``EXACT_CANDIDATES`` candidates, a branch and bound over subsets in rank order finds
the cheapest set: it prunes a branch whose lower bound (tier, work lost, count: the fewest
victims whose groups could free enough) is no cheaper than the best set found, or whose
every candidate evicted would still leave too little room. Beyond that, the cheapest
candidates are added in rank order until the gang fits, needless ones are dropped (most
expensive first), and a bounded local search swaps one or two victims for one cheaper
outsider while that makes the set cheaper.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import combinations

import numpy as np

from .free_capacity import ClusterState
from .gang import GangShape, gang_capacity
from .model import ReplicaPlacement, RunningWorkload

MAX_CANDIDATES = 32  # bounds the search; the cheapest victims come first anyway
EXACT_CANDIDATES = 12  # up to this many candidates the search is exact
# Placement trials an exact search may make; a topology that defeats the capacity bound
# could otherwise try thousands of subsets (never reached with a dozen plain candidates).
EXACT_TRIALS = 256
# The bounded search's improvement phase: placement trials, capacity checks, and how many
# of the most expensive victims may leave for how many of the cheapest outsiders.
LOCAL_TRIALS = 4
LOCAL_CHECKS = 32
SWAP_OUT = 4
SWAP_IN = 6

_MICROSECOND = timedelta(microseconds=1)

Cost = tuple[int, int, int]  # highest tier, work lost, number of victims


@dataclass(frozen=True)
class Victim:
    workload: RunningWorkload
    reason: str


def lost_since(
    *,
    started_at: datetime,
    now: datetime,
    last_checkpoint: datetime | None = None,
    checkpoint_interval: timedelta | None = None,
) -> datetime:
    """Since when an eviction at ``now`` loses the work: the last checkpoint, reported or due
    by the declared interval (counted from ``started_at``), or else the start."""
    since = started_at
    if checkpoint_interval:
        since += max(now - started_at, timedelta(0)) // checkpoint_interval * checkpoint_interval
    if last_checkpoint is not None and last_checkpoint > since:
        since = min(last_checkpoint, now)
    return since


def work_lost(*, workload: RunningWorkload, now: datetime) -> int:
    """GPU amount times run time since the last checkpoint (``lost_since``), in milli-GPU x
    microseconds."""
    since = workload.started_at
    # Most work declares no checkpoints: the cost is ranked for every candidate of every search.
    if workload.last_checkpoint is not None or workload.checkpoint_interval:
        since = lost_since(
            started_at=since,
            now=now,
            last_checkpoint=workload.last_checkpoint,
            checkpoint_interval=workload.checkpoint_interval,
        )
    elapsed = max(now - since, timedelta(0)) // _MICROSECOND
    return workload.request.gpu_milli_per_replica * len(workload.placements) * elapsed


def eviction_cost(*, workload: RunningWorkload, now: datetime) -> tuple:
    """A workload's canonical rank as a victim: lowest tier first, then least work lost,
    then by what it holds and when it started; never by id or name."""
    held = tuple(
        sorted(
            (
                p.node,
                p.gpu_indices,
                p.gpu_milli,
                p.mig_profile or "",
                p.mig_count,
                p.cpu_milli,
                p.memory_mib,
            )
            for p in workload.placements
        )
    )
    return workload.request.tier, work_lost(workload=workload, now=now), held, workload.started_at


def set_cost(*, victims: Sequence[Victim], now: datetime) -> Cost:
    """The cost of evicting ``victims`` together (see the module docstring)."""
    return (
        max((v.workload.request.tier for v in victims), default=0),
        sum(work_lost(workload=v.workload, now=now) for v in victims),
        len(victims),
    )


def choose_victims(
    *,
    cluster: ClusterState,
    candidates: Sequence[Victim],
    now: datetime,
    shape: GangShape,
    among: np.ndarray,
    place: Callable[[Sequence[Victim]], tuple[ReplicaPlacement, ...] | None],
) -> tuple[list[Victim], tuple[ReplicaPlacement, ...]] | None:
    """The cheapest set of ``candidates`` whose eviction lets ``place(victims)`` succeed, in
    rank order, with the gang's placements; None if no set does.

    ``place`` places the gang of ``shape`` on the nodes ``among`` (indices), or leaves the
    cluster as it was and returns None; it sees the victims, so that it can also ask whether
    they free enough quota. On success the cluster holds the gang's placements with the
    victims' capacity released; on failure it is unchanged.
    """
    ranked = sorted(
        candidates, key=lambda v: (eviction_cost(workload=v.workload, now=now), v.reason)
    )[:MAX_CANDIDATES]
    if not ranked:
        return None
    search = _Search(cluster=cluster, ranked=ranked, now=now, shape=shape, among=among)
    try:
        if len(ranked) <= EXACT_CANDIDATES:
            search.exact(place)
        else:
            search.bounded(place)
    finally:
        cluster.restore(search.saved)
    if search.best is None:
        return None
    mask, placements, state = search.best
    cluster.restore(state)
    return [ranked[i] for i in _bits(mask)], placements


def _bits(mask: int) -> list[int]:
    """The ranks in ``mask``, lowest first."""
    ranks = []
    while mask:
        low = mask & -mask
        ranks.append(low.bit_length() - 1)
        mask ^= low
    return ranks


class _Search:
    """One victim search. Sets of candidates are bit masks over their ranks.

    Between steps the cluster is as it was given (``saved``); a step releases victims,
    looks, and restores it.
    """

    def __init__(
        self,
        *,
        cluster: ClusterState,
        ranked: Sequence[Victim],
        now: datetime,
        shape: GangShape,
        among: np.ndarray,
    ) -> None:
        self.cluster = cluster
        self.ranked = ranked
        self.shape = shape
        self.saved = cluster.checkpoint()
        self.tiers = [v.workload.request.tier for v in ranked]
        self.lost = [work_lost(workload=v.workload, now=now) for v in ranked]
        self.best: tuple[int, tuple[ReplicaPlacement, ...], dict[str, np.ndarray]] | None = None
        self.best_key: tuple[Cost, tuple[int, ...]] | None = None
        self.trials = 0
        self._failed: set[int] = set()
        self._group_room(among)

    # -- free capacity -------------------------------------------------------------------

    def _group_room(self, among: np.ndarray) -> None:
        """Group the candidates that share a node of ``among`` (union-find); note each
        group's nodes and the gang's room on them now, and the room everywhere."""
        cluster = self.cluster
        usable = np.zeros(len(cluster), dtype=bool)
        usable[among] = True
        nodes_of = []
        for victim in self.ranked:
            nodes = set()
            for p in victim.workload.placements:
                node = cluster.index.get(p.node)
                if node is not None and usable[node]:
                    nodes.add(node)
            nodes_of.append(nodes)
        parent = list(range(len(self.ranked)))

        def root(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        owner: dict[int, int] = {}
        for i, nodes in enumerate(nodes_of):
            for node in nodes:
                if node in owner:
                    parent[root(i)] = root(owner[node])
                else:
                    owner[node] = i
        groups: dict[int, list[int]] = {}
        for i, nodes in enumerate(nodes_of):
            if nodes:
                groups.setdefault(root(i), []).append(i)
        self.group_masks = [sum(1 << i for i in members) for members in groups.values()]
        self.group_nodes = [
            np.array(sorted(set().union(*(nodes_of[i] for i in members))), dtype=np.int64)
            for members in groups.values()
        ]
        self.group_of = [-1] * len(self.ranked)
        for g, members in enumerate(groups.values()):
            for i in members:
                self.group_of[i] = g
        self.needed = self.shape.min_replicas
        self.base = self._room_on(among)
        self.group_base = self._rooms(list(range(len(self.group_masks))))
        self._deltas: list[dict[int, int]] = [{} for _ in self.group_masks]

    def _room_on(self, nodes: np.ndarray) -> int:
        # A node's replicas count up to the gang's minimum: the sum reaches the minimum
        # exactly when the unclipped one does, and never overflows.
        capacity = gang_capacity(cluster=self.cluster, shape=self.shape, among=nodes)
        return int(np.minimum(capacity, self.needed).sum())

    def _rooms(self, groups: list[int]) -> list[int]:
        """The gang's room on each group's nodes, the cluster as it is now."""
        if not groups:
            return []
        nodes = [self.group_nodes[g] for g in groups]
        capacity = gang_capacity(
            cluster=self.cluster, shape=self.shape, among=np.concatenate(nodes)
        )
        starts = np.cumsum([0] + [len(n) for n in nodes[:-1]])
        return np.add.reduceat(np.minimum(capacity, self.needed), starts).tolist()

    def room(self, mask: int, *, near: tuple[int, int] | None = None) -> int:
        """The gang's room with the victims of ``mask`` evicted. ``near``: another set and
        its room (already computed here), when ``mask`` differs from it in a few victims."""
        if near is None:
            other, total = 0, self.base
            groups: Iterable[int] = range(len(self.group_masks))
        else:
            other, total = near
            groups = sorted({self.group_of[i] for i in _bits(mask ^ other)} - {-1})
        missing = []
        for g in groups:
            group = self.group_masks[g]
            before, sub = other & group, mask & group
            if before == sub:
                continue
            if before:
                total -= self._deltas[g][before]
            if sub:
                delta = self._deltas[g].get(sub)
                if delta is None:
                    missing.append((g, sub))
                else:
                    total += delta
        if missing:
            for _, sub in missing:
                self._release(sub)
            groups = [g for g, _ in missing]
            for (g, sub), room in zip(missing, self._rooms(groups), strict=True):
                delta = self._deltas[g][sub] = room - self.group_base[g]
                total += delta
            self.cluster.restore(self.saved)
        return total

    def fits(self, mask: int) -> bool:
        return self.room(mask) >= self.needed

    def _release(self, mask: int) -> None:
        for i in _bits(mask):
            for placement in self.ranked[i].workload.placements:
                self.cluster.release(placement)

    # -- placing -----------------------------------------------------------------------

    def cost(self, mask: int) -> Cost:
        members = _bits(mask)
        return (
            max(self.tiers[i] for i in members),
            sum(self.lost[i] for i in members),
            len(members),
        )

    def offer(self, mask: int, place) -> bool:
        """Whether the gang fits with ``mask`` evicted; if so and the set is the cheapest
        yet, keep it (with the cluster as the placement left it)."""
        if not mask or mask in self._failed or not self.fits(mask):
            return False
        self.trials += 1
        self._release(mask)
        victims = [self.ranked[i] for i in _bits(mask)]
        placements = place(victims)
        if placements is None:
            self._failed.add(mask)
            self.cluster.restore(self.saved)
            return False
        key = (self.cost(mask), tuple(_bits(mask)))
        if self.best_key is None or key < self.best_key:
            self.best_key = key
            self.best = (mask, placements, self.cluster.checkpoint())
        self.cluster.restore(self.saved)
        return True

    # -- exact: branch and bound -------------------------------------------------------

    def exact(self, place) -> None:
        count = len(self.ranked)
        everyone = (1 << count) - 1
        if not self.fits(everyone):
            return
        # The fewest victims that could free enough room: k victims touch at most k groups.
        shortfall = self.needed - self.base
        most = sorted(
            (self.room(everyone & group) - self.base for group in self.group_masks),
            reverse=True,
        )
        fewest = 1
        while shortfall > sum(most[:fewest]):
            fewest += 1
        # Cheapest work lost by m more victims from rank k on.
        cheapest = [[0] for _ in range(count + 1)]
        for start in range(count):
            losts = sorted(self.lost[start:])
            for m in range(len(losts)):
                cheapest[start].append(cheapest[start][-1] + losts[m])
        suffix = [0] * (count + 1)
        for k in range(count - 1, -1, -1):
            suffix[k] = suffix[k + 1] | 1 << k

        def branch(start: int, mask: int, size: int, tier: int, lost: int) -> None:
            for k in range(start, count):
                if self.trials >= EXACT_TRIALS:
                    return
                reach = mask | suffix[k]
                if not self.fits(reach):
                    return  # every later branch reaches less
                new_tier, new_lost, new_size = (
                    max(tier, self.tiers[k]),
                    lost + self.lost[k],
                    size + 1,
                )
                more = max(fewest - new_size, 0)
                if more > count - k - 1:
                    return
                if more:
                    bound = (
                        max(new_tier, self.tiers[k + 1]),
                        new_lost + cheapest[k + 1][more],
                        fewest,
                    )
                else:
                    bound = (new_tier, new_lost, new_size)
                if self.best_key is not None and bound >= self.best_key[0]:
                    continue
                chosen = mask | 1 << k
                if not more and self.offer(chosen, place):
                    continue  # a superset only costs more
                branch(k + 1, chosen, new_size, new_tier, new_lost)

        branch(0, 0, 0, 0, 0)

    # -- bounded: greedy, trim, local search -------------------------------------------

    def bounded(self, place) -> None:
        count = len(self.ranked)
        # Add candidates in rank order until the gang is placed; once the cheapest alone
        # is not enough, make sure everyone together would be.
        mask, room = 0, self.base
        for k in range(count):
            mask, room = mask | 1 << k, self.room(mask | 1 << k, near=(mask, room))
            if room >= self.needed and self.offer(mask, place):
                break
            if k == 0 and count > 1 and not self.fits((1 << count) - 1):
                return
        if self.best is None:
            return
        for i in reversed(_bits(mask)[:-1]):
            trimmed = mask & ~(1 << i)
            if self.offer(trimmed, place):
                mask = trimmed
        self._improve(place)

    def _improve(self, place) -> None:
        """Move to a cheaper set one step at a time (a victim dropped, or one or two of the
        most expensive victims swapped for one of the cheapest outsiders), cheapest move
        first, within the budgets."""
        checks = trials = 0
        width = len(self.ranked)
        while True:
            mask = self.best[0]
            cost_now = self.best_key[0]
            lost = cost_now[1]
            room = self.room(mask)
            inside = _bits(mask)
            outside = [i for i in range(width) if not mask >> i & 1][:SWAP_IN]
            leaving = inside[-SWAP_OUT:]
            moves = []
            for out in (*combinations(leaving, 1), *combinations(leaving, 2)):
                kept = mask & ~sum(1 << i for i in out)
                kept_lost = lost - sum(self.lost[i] for i in out)
                steps = [(kept | 1 << i, kept_lost + self.lost[i]) for i in outside]
                if len(out) == 1 and kept:
                    steps.append((kept, kept_lost))
                for move, move_lost in steps:
                    move_size = move.bit_count()
                    cost = (self.tiers[move.bit_length() - 1], move_lost, move_size)
                    if cost < cost_now or (cost == cost_now and _earlier(move, mask)):
                        # Among equal costs (so equal sizes) the earlier set in the tie order
                        # is the one whose bits, read from rank 0 up, make the larger number.
                        moves.append((cost, -int(f"{move:0{width}b}"[::-1], 2), move))
            moves.sort()
            for _, _, move in moves:
                if checks >= LOCAL_CHECKS or trials >= LOCAL_TRIALS:
                    return
                checks += 1
                if move in self._failed or self.room(move, near=(mask, room)) < self.needed:
                    continue
                trials += 1
                if self.offer(move, place):
                    break
            else:
                return


def _earlier(mask: int, other: int) -> bool:
    """Whether the set ``mask`` comes before ``other`` (as large) in the tie order: at the
    lowest rank where they differ, ``mask`` holds the victim."""
    differ = mask ^ other
    return bool(mask & differ & -differ)
