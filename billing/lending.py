"""The lending rule: whose reserved idle GPUs others' work ran on, and for how long, read off
the one instant-by-instant decomposition of a pool that the operator's books use
(``billing.allocation``): a reservation's *reserved and lent* there is exactly what it is
credited here. Pure: spans and amounts in, milli-GPU-microseconds (or
milli-instance-microseconds) per reservation out, exact integers, so no microsecond is lost or
counted twice.

At each instant, in one pool (and MIG profile, for reservations of instances):
- each active reservation holds its GPUs; its owner's work there (its project's, for a
  project's reservation; any of its organization's otherwise) fills it first, project
  reservations before the organization's, then by key; what is left of it is idle;
- every other use of the pool is a guest's: it fills the unreserved capacity (the pool's
  capacity less what the active reservations hold) first, and only the excess sits on
  reserved idle GPUs, never more than they are;
- that excess is split among the reservations in proportion to their idle GPUs: over a span
  where nothing changes, the span's excess-microseconds are divided by largest remainder
  (ties to the first by key), so the parts add up to the whole exactly.
Lent time therefore never exceeds a reservation's idle time, nor the guests' time.
"""

from dataclasses import dataclass
from datetime import datetime

from .allocation import MICROSECOND, Layer, Span, Work, allocate

__all__ = ["MICROSECOND", "Holding", "Span", "Use", "lent"]


@dataclass(frozen=True)
class Holding:
    """A reservation in the pool: ``amount`` in milli-units, held over [starts_at, ends_at)."""

    key: str
    organization: object
    project: object | None
    amount: int
    starts_at: datetime
    ends_at: datetime


@dataclass(frozen=True)
class Use:
    """Work in the pool: ``amount`` milli-units over [starts_at, ends_at) (None: running)."""

    organization: object
    project: object | None
    amount: int
    starts_at: datetime
    ends_at: datetime | None


def lent(
    *,
    capacity: list[Span],
    holdings: list[Holding],
    uses: list[Use],
    start: datetime,
    end: datetime,
) -> dict[str, int]:
    """Milli-unit-microseconds lent by each holding over [start, end), by key (every holding
    active there is named, 0 if it lent nothing). ``capacity``: the pool's spans of available
    or unavailable milli-units, as its nodes' availability history has them (the books'
    ``pool_capacity_spans``)."""
    layer = Layer(
        weight=1,
        capacity=capacity,
        holdings=[
            Span(h.amount, h.starts_at, h.ends_at, owner=(h.organization, h.project), key=h.key)
            for h in holdings
        ],
        uses=Work.of(
            [
                Span(u.amount, u.starts_at, u.ends_at, owner=(u.organization, u.project))
                for u in uses
            ]
        ),
    )
    parts = allocate(layers=[layer], start=start, end=end).reservations
    return {
        h.key: parts[h.key]["lent"] for h in holdings if h.starts_at < end and h.ends_at > start
    }
