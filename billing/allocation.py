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
not a loop per instant. Work comes as columns (``Work``: a million spans of a month are read
as arrays, their owners as small integers), each span placed among the change points once.
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
# Where a span still open ends: after any period.
RUNNING = np.iinfo(np.int64).max

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


@dataclass(frozen=True)
class Work:
    """Work in a layer as columns: each span's ``amounts`` (milli-units), ``starts`` and
    ``ends`` (microseconds since the epoch; ``RUNNING`` for a span still open) as int64
    arrays, and ``owners``, each span's index into ``who`` (organization, project, tier): a
    month's million spans neither build a datetime nor hash an owner each."""

    amounts: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    owners: np.ndarray
    who: tuple[tuple, ...]

    @classmethod
    def of(cls, spans: list[Span]) -> "Work":
        """The columns of ``spans`` (their ``owner`` and ``tier`` the owner)."""
        who: dict[tuple, int] = {}
        owners = [who.setdefault((*span.owner, span.tier), len(who)) for span in spans]
        return cls(
            amounts=np.array([span.amount for span in spans], dtype=np.int64),
            starts=np.array([microseconds(span.starts_at) for span in spans], dtype=np.int64),
            ends=np.array(
                [RUNNING if s.ends_at is None else microseconds(s.ends_at) for s in spans],
                dtype=np.int64,
            ),
            owners=np.array(owners, dtype=np.intp),
            who=tuple(who),
        )


@dataclass
class Layer:
    """One layer of a pool: ``weight`` units per milli-unit (7 for whole GPUs, a MIG
    profile's slices for its instances), its capacity, reservations, work and guarantees."""

    weight: int
    capacity: list[Span] = field(default_factory=list)
    holdings: list[Span] = field(default_factory=list)
    uses: Work = field(default_factory=lambda: Work.of([]))
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
    """The change points of one layer in [start, end), each span placed among them once (the
    pieces it starts and ends at), and the level of any set of spans over each piece."""

    def __init__(self, layer: Layer, start: int, end: int) -> None:
        self.start, self.end = start, end
        spans = Work.of([*layer.capacity, *layer.holdings, *layer.guarantees])
        # Every whole hour cuts too, as the lending credit's hourly pieces do: each piece's
        # lent time is split among the reservations the same way whoever asks.
        hours = np.arange(-(-start // HOUR) * HOUR, end, HOUR, dtype=np.int64)
        moments = [spans.starts, spans.ends, layer.uses.starts, layer.uses.ends]
        points = np.sort(
            np.concatenate([np.array([start, end]), *map(self._clipped, moments), hours])
        )
        # Each point once (sorting then dropping repeats beats np.unique's hashing here).
        self.cuts = points[np.concatenate(([True], points[1:] != points[:-1]))]
        self.lengths = np.diff(self.cuts)

    def _clipped(self, moments: np.ndarray) -> np.ndarray:
        return np.clip(moments, self.start, self.end)

    def placed(self, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The change points' indexes where spans from ``starts`` to ``ends`` begin and end."""
        return (
            np.searchsorted(self.cuts, self._clipped(starts)),
            np.searchsorted(self.cuts, self._clipped(ends)),
        )

    def level(self, amounts: np.ndarray, firsts: np.ndarray, lasts: np.ndarray) -> np.ndarray:
        """The sum over each piece of the amounts of spans placed at ``firsts`` to ``lasts``."""
        deltas = np.zeros(len(self.cuts), dtype=np.int64)
        np.add.at(deltas, firsts, amounts)
        np.add.at(deltas, lasts, -amounts)
        return np.cumsum(deltas)[:-1]

    def level_of(self, spans: list[Span]) -> np.ndarray:
        """The level of a few spans."""
        work = Work.of(spans)
        return self.level(work.amounts, *self.placed(work.starts, work.ends))


class _Uses:
    """A layer's work placed on its grid once, grouped by owner (each owner's spans one
    slice of the columns): the level of any owners' work, and each span's microseconds."""

    def __init__(self, work: Work, grid: _Grid) -> None:
        order = np.argsort(work.owners, kind="stable")
        self.who, self.grid = work.who, grid
        self.amounts = work.amounts[order]
        self.firsts, self.lasts = grid.placed(work.starts[order], work.ends[order])
        self.bounds = np.searchsorted(work.owners[order], np.arange(len(work.who) + 1))

    def level(self, owners: list[int] | None = None) -> np.ndarray:
        """The level of the work of ``owners`` (indexes into ``who``; None: everyone's)."""
        if owners is None:
            return self.grid.level(self.amounts, self.firsts, self.lasts)
        rows = np.concatenate(
            [np.arange(self.bounds[o], self.bounds[o + 1]) for o in owners] or [np.arange(0)]
        )
        return self.grid.level(self.amounts[rows], self.firsts[rows], self.lasts[rows])

    def owned(self, organization, project=None) -> list[int]:
        """The owners that are ``organization``'s (its ``project``'s, if one is named)."""
        return [
            index
            for index, (of, within, _) in enumerate(self.who)
            if of == organization and project in (None, within)
        ]

    def unit_microseconds(self, owner: int) -> int:
        """The milli-unit-microseconds of ``owner``'s work in the period."""
        rows = slice(self.bounds[owner], self.bounds[owner + 1])
        cuts = self.grid.cuts
        lasted = np.maximum(cuts[self.lasts[rows]] - cuts[self.firsts[rows]], 0)
        return _dot(self.amounts[rows], lasted)


def _allocate_layer(layer: Layer, start: int, end: int, allocation: Allocation) -> None:
    grid = _Grid(layer, start, end)
    uses = _Uses(layer.uses, grid)
    weight, lengths = layer.weight, grid.lengths
    available = grid.level_of([s for s in layer.capacity if s.available])
    unavailable = grid.level_of([s for s in layer.capacity if not s.available])
    # Only the holders' work is followed piece by piece, by owner and tier (it fills their
    # reservations); the others' adds up to the guests' level and is counted owner by owner.
    holders = {h.owner[0] for h in layer.holdings}
    of_holders: dict[tuple, np.ndarray] = {}
    for index, owner in enumerate(uses.who):
        if owner[0] in holders:
            of_holders[owner] = uses.level([index])
        else:
            allocation.on_demand[owner] += uses.unit_microseconds(index) * weight
    everyone = uses.level()
    held = grid.level_of(layer.holdings)
    fills, idles, remaining = _fills(layer.holdings, of_holders, grid)
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
    unused = np.zeros_like(left)
    for _, level in _unused_guarantees(layer, uses, grid):
        unused += level
    parts["guarantee_idle"] = np.minimum(unused, left)
    parts["unallocated_idle"] = left - parts["guarantee_idle"]
    parts["unavailable"] = unavailable
    for name, level in parts.items():
        allocation.totals[name] += _dot(level, lengths) * weight
    # What was lent where capacity was available (none while its nodes are down).
    _reservations(layer, fills, idles, parts["reserved_lent"], grid, allocation)
    _guarantees(layer, uses, grid, unused, parts["guarantee_idle"], allocation)


# Each product of two int64 columns summed exactly in int64 halves (see ``_dot``).
LOW_BITS = 32


def _dot(level: np.ndarray, lengths: np.ndarray) -> int:
    """The exact sum of level times length: a month of thousands of GPUs in
    milli-unit-microseconds passes 64 bits, but each product does not (checked, else Python
    integers), and the products' high and low 32 bits summed apart cannot overflow under
    2**31 terms."""
    if not len(level):
        return 0
    bound = int(np.abs(level).max()) * int(np.abs(lengths).max())
    if bound >= 2**63 or len(level) >= 2**31:
        return int(np.dot(level.astype(object), lengths.astype(object)))
    products = level.astype(np.int64) * lengths.astype(np.int64)
    high = int(np.sum(products >> LOW_BITS))
    low = int(np.sum(products & (2**LOW_BITS - 1)))
    return (high << LOW_BITS) + low


def _fills(holdings: list[Span], use_of: dict[tuple, np.ndarray], grid: _Grid):
    """Per reservation, how much of it its owner's work fills at each piece, and how much is
    left idle: project reservations first (from their project's work), then the
    organization's (from any of its projects' work left), then by key; and each holder's work
    (by owner and tier) that its reservations leave over."""
    remaining = dict(use_of)
    fills, idles = {}, {}
    for holding in sorted(holdings, key=lambda h: (h.owner[1] is None, h.key)):
        amount = grid.level_of([holding])
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


def _unused_guarantees(layer: Layer, uses: _Uses, grid: _Grid):
    """Each guarantee's owner and what of it its work leaves unused at each piece (a
    project's guarantee counts the project's work, an organization's all of its work), one at
    a time (a level of every piece each)."""
    for guarantee in layer.guarantees:
        work = uses.level(uses.owned(*guarantee.owner))
        yield guarantee.owner, np.maximum(grid.level_of([guarantee]) - work, 0)


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
    layer: Layer, uses: _Uses, grid: _Grid, unused, idle_level, allocation: Allocation
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
    for owner, level in _unused_guarantees(layer, uses, grid):
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
