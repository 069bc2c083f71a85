"""The operator's books, instant by instant: every unit of a pool's capacity over a period
attributed to exactly one category, in exact integers (unit-microseconds), so the categories
add up to the pool's hours to the microsecond. Pure: spans in, sums out.

A pool is decomposed layer by layer, as the lending rule decomposes it: its whole GPUs (whole
GPUs and GPU shares use them, in milli-GPU) and each MIG profile's instances (in
milli-instances). At each instant of a layer:
- capacity is available or unavailable (its nodes cordoned or not ready);
- each active reservation holds its amount; its owner's work fills it first (project
  reservations before the organization's, then by key): *reserved and used*; the rest of it is
  idle;
- others' work (guests) fills the unreserved capacity first: *used and billed*; only the excess
  sits on reserved idle capacity, never more than there is: *reserved and lent*; what the
  reservations still leave is *reserved and idle*;
- of the unreserved capacity nobody uses, as much as the guarantees (quota) of tenants not
  using them add up to is *granted quota idle*, the rest *unallocated idle*.
Where the records disagree with the capacity (work still recorded on a node that went down,
reservations beyond what is left), each category is kept within what is available, in the
order above, so the sum still holds.

Layers are weighed into one unit, a seven-thousandth of a GPU (``UNITS_PER_GPU``), so that a
GPU share (in milli-GPU) and a MIG instance (slices of seven) both carry their exact fraction of
a GPU. The sweep runs over the sorted change points with numpy: cumulative sums of the changes,
not a loop per instant.
"""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np

MILLI = 1000
SLICES_PER_GPU = 7
UNITS_PER_GPU = MILLI * SLICES_PER_GPU
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)

CATEGORIES = (
    "used_billed",
    "reserved_used",
    "reserved_lent",
    "reserved_idle",
    "guarantee_idle",
    "unallocated_idle",
    "unavailable",
)


@dataclass(frozen=True)
class Span:
    """``amount`` milli-units of a layer over [starts_at, ends_at) (None: still open).
    ``owner``: (organization, project) for work and guarantees, ``key`` names a reservation;
    ``available`` tells capacity apart."""

    amount: int
    starts_at: datetime
    ends_at: datetime | None
    owner: tuple = (None, None)
    key: str = ""
    available: bool = True


@dataclass
class Layer:
    """One layer of a pool: ``weight`` units per milli-unit (7 for whole GPUs, a MIG
    profile's slices for its instances), its capacity, reservations, work and guarantees."""

    weight: int
    capacity: list[Span] = field(default_factory=list)
    holdings: list[Span] = field(default_factory=list)
    uses: list[Span] = field(default_factory=list)
    guarantees: list[Span] = field(default_factory=list)


@dataclass
class Allocation:
    """Unit-microseconds by category, and the parts the reports name."""

    totals: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    # Per reservation key: what its owner used of it, what it lent, what sat idle.
    reservations: dict[str, dict[str, int]] = field(default_factory=dict)
    # Per owner (organization, project) with a guarantee: what of it sat idle.
    guarantees: dict[tuple, int] = field(default_factory=lambda: defaultdict(int))
    # Per organization: its work's unit-microseconds outside its own reservations.
    on_demand: dict[object, int] = field(default_factory=lambda: defaultdict(int))

    @property
    def total(self) -> int:
        return sum(self.totals.values())


def microseconds(moment: datetime) -> int:
    return (moment - EPOCH) // MICROSECOND


def allocate(*, layers: list[Layer], start: datetime, end: datetime) -> Allocation:
    """The pool's capacity over [start, end), layer by layer, attributed once."""
    allocation = Allocation()
    for layer in layers:
        _allocate_layer(layer, microseconds(start), microseconds(end), allocation)
    return allocation


class _Grid:
    """The change points of one layer in [start, end) and the level of any set of spans over
    each piece between them."""

    def __init__(self, spans: list[Span], start: int, end: int) -> None:
        points = [start, end]
        for span in spans:
            points.append(microseconds(span.starts_at))
            if span.ends_at is not None:
                points.append(microseconds(span.ends_at))
        cuts = np.unique(np.clip(np.array(points, dtype=np.int64), start, end))
        self.cuts = cuts
        self.lengths = np.diff(cuts)
        self.start, self.end = start, end

    def level(self, spans: list[Span]) -> np.ndarray:
        """The sum of ``spans``' amounts over each piece."""
        deltas = np.zeros(len(self.cuts), dtype=np.int64)
        if spans:
            amounts = np.array([s.amount for s in spans], dtype=np.int64)
            starts = np.array([microseconds(s.starts_at) for s in spans], dtype=np.int64)
            ends = np.array(
                [self.end if s.ends_at is None else microseconds(s.ends_at) for s in spans],
                dtype=np.int64,
            )
            starts, ends = (
                np.clip(starts, self.start, self.end),
                np.clip(ends, self.start, self.end),
            )
            np.add.at(deltas, np.searchsorted(self.cuts, starts), amounts)
            np.add.at(deltas, np.searchsorted(self.cuts, ends), -amounts)
        return np.cumsum(deltas)[:-1]


def _allocate_layer(layer: Layer, start: int, end: int, allocation: Allocation) -> None:
    grid = _Grid([*layer.capacity, *layer.holdings, *layer.uses, *layer.guarantees], start, end)
    available = grid.level([s for s in layer.capacity if s.available])
    unavailable = grid.level([s for s in layer.capacity if not s.available])
    by_owner: dict[tuple, list[Span]] = defaultdict(list)
    for use in layer.uses:
        by_owner[use.owner].append(use)
    use_of = {owner: grid.level(spans) for owner, spans in by_owner.items()}
    everyone = grid.level(layer.uses)
    held = grid.level(layer.holdings)
    fills, idles = _fills(layer.holdings, use_of, grid)
    owners_fill = sum(fills.values(), np.zeros_like(everyone))
    idle = sum(idles.values(), np.zeros_like(everyone))
    guests = everyone - owners_fill
    unreserved = np.maximum(available - held, 0)
    lent = np.minimum(np.maximum(guests - unreserved, 0), idle)
    # Each category within what is still available, in the rule's order.
    left = available.copy()
    parts = {}
    for name, wanted in (
        ("reserved_used", owners_fill),
        ("reserved_lent", lent),
        ("used_billed", guests - lent),
        ("reserved_idle", idle - lent),
    ):
        parts[name] = np.minimum(np.maximum(wanted, 0), left)
        left = left - parts[name]
    unused = _unused_guarantees(layer.guarantees, use_of, grid)
    parts["guarantee_idle"] = np.minimum(sum(unused.values(), np.zeros_like(left)), left)
    parts["unallocated_idle"] = left - parts["guarantee_idle"]
    parts["unavailable"] = unavailable
    weight, lengths = layer.weight, grid.lengths
    for name, level in parts.items():
        allocation.totals[name] += _dot(level, lengths) * weight
    _reservations(layer, fills, idles, lent, grid, allocation)
    _guarantees(unused, parts["guarantee_idle"], grid, weight, allocation)
    # An organization's work outside its own reservations (whichever of its projects ran it).
    held_by = defaultdict(list)
    for holding in layer.holdings:
        held_by[holding.owner[0]].append(fills[holding.key])
    for organization in {owner[0] for owner in use_of}:
        work = sum(level for owner, level in use_of.items() if owner[0] == organization)
        outside = work - sum(held_by[organization], np.zeros_like(work))
        allocation.on_demand[organization] += _dot(outside, lengths) * weight


def _dot(level: np.ndarray, lengths: np.ndarray) -> int:
    """The exact sum of level times length: in Python integers, for a month of thousands of
    GPUs in milli-unit-microseconds passes 64 bits."""
    return int(np.dot(level.astype(object), lengths.astype(object)))


def _fills(
    holdings: list[Span], use_of: dict[tuple, np.ndarray], grid: _Grid
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Per reservation, how much of it its owner's work fills at each piece, and how much is
    left idle: project reservations first (from their project's work), then the
    organization's (from any of its projects' work left), then by key."""
    remaining = dict(use_of)
    fills, idles = {}, {}
    for holding in sorted(holdings, key=lambda h: (h.owner[1] is None, h.key)):
        amount = grid.level([holding])
        organization, project = holding.owner
        left = amount.copy()
        for owner in sorted(remaining, key=str):
            if owner[0] != organization or project not in (None, owner[1]):
                continue
            taken = np.minimum(left, remaining[owner])
            remaining[owner] = remaining[owner] - taken
            left = left - taken
        fills[holding.key] = amount - left
        idles[holding.key] = left
    return fills, idles


def _unused_guarantees(
    guarantees: list[Span], use_of: dict[tuple, np.ndarray], grid: _Grid
) -> dict[tuple, np.ndarray]:
    """Per guarantee's owner, what of it its work leaves unused at each piece (a project's
    guarantee counts the project's work, an organization's all of its work)."""
    unused = {}
    for guarantee in guarantees:
        organization, project = guarantee.owner
        work = sum(
            (
                level
                for owner, level in use_of.items()
                if owner[0] == organization and project in (None, owner[1])
            ),
            np.zeros(len(grid.lengths), dtype=np.int64),
        )
        unused[guarantee.owner] = np.maximum(grid.level([guarantee]) - work, 0)
    return unused


def _reservations(layer, fills, idles, lent, grid: _Grid, allocation: Allocation) -> None:
    """Each reservation's used, lent and idle unit-microseconds: the lent excess of each piece
    split among the reservations in proportion to their idle capacity, by largest remainder
    (ties to the first key), as the lending credit splits it."""
    weight, lengths = layer.weight, grid.lengths
    lent_to = dict.fromkeys(fills, 0)
    for piece in np.flatnonzero(lent):
        weights = {key: int(idles[key][piece]) for key in sorted(idles)}
        for key, part in split(int(lent[piece]) * int(lengths[piece]), weights).items():
            lent_to[key] += part
    for key in fills:
        allocation.reservations[key] = {
            "used": _dot(fills[key], lengths) * weight,
            "lent": lent_to[key] * weight,
            "idle": (_dot(idles[key], lengths) - lent_to[key]) * weight,
        }


def _guarantees(unused, idle_level, grid: _Grid, weight: int, allocation: Allocation) -> None:
    """Each guarantee's idle unit-microseconds: each piece's granted quota idle split among
    the unused guarantees in proportion to what of each is unused (rounded down), what the
    rounding leaves given by largest remainder over the period; the parts add up exactly."""
    pieces = np.flatnonzero(idle_level)
    if not len(pieces) or not unused:
        return
    owners = sorted(unused, key=str)
    weights = np.array([unused[o][pieces] for o in owners], dtype=object)
    whole = weights.sum(axis=0)
    total = idle_level[pieces].astype(object) * grid.lengths[pieces].astype(object)
    numerators = weights * total
    parts = {o: int(sum(numerators[i] // whole)) for i, o in enumerate(owners)}
    # What rounding down left per owner (a float: it only orders who gets the units left).
    remainders = {o: float(sum(numerators[i] % whole / whole)) for i, o in enumerate(owners)}
    left = int(sum(total)) - sum(parts.values())
    order = sorted(owners, key=lambda o: -(remainders[o] % 1))
    for owner in owners:
        extra = min(int(remainders[owner]), left)
        parts[owner] += extra
        left -= extra
    for index in range(left):
        parts[order[index % len(order)]] += 1
    for owner, part in parts.items():
        allocation.guarantees[owner] += part * weight


def split(total: int, weights: dict) -> dict:
    """``total`` split in proportion to ``weights`` by largest remainder, ties to the first
    key in order; the parts add up to ``total``."""
    weight = sum(weights.values())
    if not total or not weight:
        return {}
    parts = {key: total * w // weight for key, w in weights.items()}
    order = list(weights)
    remainders = sorted(order, key=lambda key: (-(total * weights[key] % weight), order.index(key)))
    for key in remainders[: total - sum(parts.values())]:
        parts[key] += 1
    return parts
