"""The lending rule, written once: whose reserved idle GPUs others' work ran on, and for how
long. Pure: spans and amounts in, milli-GPU-microseconds (or milli-instance-microseconds) per
reservation out, exact integers, so no microsecond is lost or counted twice.

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
from datetime import datetime, timedelta
from itertools import pairwise

MICROSECOND = timedelta(microseconds=1)


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
    *, capacity: int, holdings: list[Holding], uses: list[Use], start: datetime, end: datetime
) -> dict[str, int]:
    """Milli-unit-microseconds lent by each holding over [start, end), by key (every holding
    active there is named, 0 if it lent nothing). ``capacity``: the pool's, in milli-units."""
    cuts = {start, end}
    for span in (*holdings, *uses):
        cuts.update(t for t in (span.starts_at, span.ends_at) if t is not None and start < t < end)
    ordered = sorted(holdings, key=lambda h: (h.project is None, h.key))
    totals = {h.key: 0 for h in ordered if h.starts_at < end and h.ends_at > start}
    moments = sorted(cuts)
    for span_start, span_end in pairwise(moments):
        active = [h for h in ordered if h.starts_at <= span_start and h.ends_at >= span_end]
        if not active:
            continue
        running = [
            u
            for u in uses
            if u.starts_at <= span_start and (u.ends_at is None or u.ends_at >= span_end)
        ]
        idle = _idle(active, running)
        guests = sum(u.amount for u in running) - sum(h.amount - idle[h.key] for h in active)
        unreserved = max(capacity - sum(h.amount for h in active), 0)
        on_idle = min(max(guests - unreserved, 0), sum(idle.values()))
        microseconds = (span_end - span_start) // MICROSECOND
        for key, part in _split(on_idle * microseconds, idle).items():
            totals[key] += part
    return totals


def _idle(active: list[Holding], running: list[Use]) -> dict[str, int]:
    """Per holding, what its owner's running work leaves of it (``active`` in filling order)."""
    owners: dict[tuple, int] = {}
    for use in running:
        owners[(use.organization, use.project)] = (
            owners.get((use.organization, use.project), 0) + use.amount
        )
    idle = {}
    for holding in active:
        left = holding.amount
        for owner in sorted(owners, key=str):
            organization, project = owner
            if organization != holding.organization or holding.project not in (None, project):
                continue
            taken = min(left, owners[owner])
            owners[owner] -= taken
            left -= taken
        idle[holding.key] = left
    return idle


def _split(total: int, weights: dict[str, int]) -> dict[str, int]:
    """``total`` split in proportion to ``weights`` by largest remainder, ties to the first
    key in order; the parts add up to ``total``."""
    weight = sum(weights.values())
    if not total or not weight:
        return {}
    parts = {key: total * w // weight for key, w in weights.items()}
    remainders = sorted(weights, key=lambda key: (-(total * weights[key] % weight), key))
    for key in remainders[: total - sum(parts.values())]:
        parts[key] += 1
    return parts
