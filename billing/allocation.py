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
HOUR = 3600 * 10**6  # microseconds

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
    ``owner``: (organization, project) for work, reservations and guarantees, ``tier`` the
    work's; ``key`` names a reservation; ``available`` tells capacity apart."""

    amount: int
    starts_at: datetime
    ends_at: datetime | None
    owner: tuple = (None, None)
    key: str = ""
    available: bool = True
    tier: object = None


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
    # Per (organization, project, tier): its work's unit-microseconds outside its own
    # organization's reservations (what ran on lent capacity included).
    on_demand: dict[tuple, int] = field(default_factory=lambda: defaultdict(int))

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
        # Every whole hour cuts too, as the lending credit's hourly pieces do: each piece's
        # lent time is split among the reservations the same way whoever asks.
        hours = np.arange(-(-start // HOUR) * HOUR, end, HOUR, dtype=np.int64)
        cuts = np.unique(
            np.concatenate([np.clip(np.array(points, dtype=np.int64), start, end), hours])
        )
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
    weight, lengths = layer.weight, grid.lengths
    available = grid.level([s for s in layer.capacity if s.available])
    unavailable = grid.level([s for s in layer.capacity if not s.available])
    # Only the holders' work is followed piece by piece, by owner and tier (it fills their
    # reservations); the others' adds up to the guests' level and is counted span by span.
    holders = {h.owner[0] for h in layer.holdings}
    of_holders: dict[tuple, list[Span]] = defaultdict(list)
    for use in layer.uses:
        if use.owner[0] in holders:
            of_holders[(*use.owner, use.tier)].append(use)
        else:
            allocation.on_demand[(*use.owner, use.tier)] += (
                use.amount * _lasted(use, start, end) * weight
            )
    everyone = grid.level(layer.uses)
    held = grid.level(layer.holdings)
    fills, idles, remaining = _fills(
        layer.holdings, {owner: grid.level(spans) for owner, spans in of_holders.items()}, grid
    )
    for owner, level in remaining.items():
        allocation.on_demand[owner] += _dot(level, lengths) * weight
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
    by_organization: dict[object, list[Span]] = defaultdict(list)
    for use in layer.uses:
        by_organization[use.owner[0]].append(use)
    unused = np.zeros_like(left)
    for _, level in _unused_guarantees(layer, by_organization, grid):
        unused += level
    parts["guarantee_idle"] = np.minimum(unused, left)
    parts["unallocated_idle"] = left - parts["guarantee_idle"]
    parts["unavailable"] = unavailable
    for name, level in parts.items():
        allocation.totals[name] += _dot(level, lengths) * weight
    # What was lent where capacity was available (none while its nodes are down).
    _reservations(layer, fills, idles, parts["reserved_lent"], grid, allocation)
    _guarantees(layer, by_organization, grid, unused, parts["guarantee_idle"], allocation)


def _lasted(span: Span, start: int, end: int) -> int:
    """Microseconds of ``span`` inside [start, end)."""
    until = end if span.ends_at is None else min(microseconds(span.ends_at), end)
    return max(until - max(microseconds(span.starts_at), start), 0)


def _dot(level: np.ndarray, lengths: np.ndarray) -> int:
    """The exact sum of level times length: in Python integers, for a month of thousands of
    GPUs in milli-unit-microseconds passes 64 bits."""
    return int(np.dot(level.astype(object), lengths.astype(object)))


def _fills(holdings: list[Span], use_of: dict[tuple, np.ndarray], grid: _Grid):
    """Per reservation, how much of it its owner's work fills at each piece, and how much is
    left idle: project reservations first (from their project's work), then the
    organization's (from any of its projects' work left), then by key; and each holder's work
    (by owner and tier) that its reservations leave over."""
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
    return fills, idles, remaining


def _unused_guarantees(layer: Layer, by_organization: dict, grid: _Grid):
    """Each guarantee's owner and what of it its work leaves unused at each piece (a
    project's guarantee counts the project's work, an organization's all of its work), one at
    a time (a level of every piece each)."""
    for guarantee in layer.guarantees:
        organization, project = guarantee.owner
        work = [use for use in by_organization[organization] if project in (None, use.owner[1])]
        yield guarantee.owner, np.maximum(grid.level([guarantee]) - grid.level(work), 0)


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


def _guarantees(
    layer: Layer, by_organization: dict, grid: _Grid, unused, idle_level, allocation: Allocation
) -> None:
    """Each guarantee's idle unit-microseconds: all of what it left unused where the free
    capacity covers every guarantee; where it does not, the pieces' granted quota idle split
    among the guarantees in proportion to what of each is unused (rounded down), what the
    rounding leaves given by largest remainder over the period; the parts add up exactly."""
    short = np.flatnonzero(idle_level < unused)
    covered = np.ones(len(grid.lengths), dtype=bool)
    covered[short] = False
    # An owner may hold several guarantees in a layer (one per quota grant): its parts add up.
    floors, remainders = defaultdict(int), defaultdict(float)
    whole = unused[short].astype(object)
    total = idle_level[short].astype(object) * grid.lengths[short].astype(object)
    for owner, level in _unused_guarantees(layer, by_organization, grid):
        allocation.guarantees[owner] += _dot(level[covered], grid.lengths[covered]) * layer.weight
        numerators = level[short].astype(object) * total
        floors[owner] += int(sum(numerators // whole)) if len(short) else 0
        # What rounding down left (a float: it only orders who gets the units left).
        remainders[owner] += float(sum(numerators % whole / whole)) if len(short) else 0.0
    owners = list(floors)
    left = int(sum(total)) - sum(floors.values())
    for owner in owners:
        extra = min(int(remainders[owner]), left)
        floors[owner] += extra
        left -= extra
    order = sorted(owners, key=lambda o: -(remainders[o] % 1))
    # What is left goes round the owners in that order: as many whole rounds as it makes, then
    # one more unit to each of the first (in arithmetic: a unit at a time took minutes).
    rounds, first = divmod(left, len(order)) if order else (0, 0)
    for position, owner in enumerate(order):
        floors[owner] += rounds + (position < first)
    for owner, part in floors.items():
        allocation.guarantees[owner] += part * layer.weight


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
