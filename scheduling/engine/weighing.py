"""Running work weighed as victims for one kind of request, as far as its searches ask: the
Preemptor keeps one per kind until running work changes."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from .model import RunningWorkload
from .victims import MAX_CANDIDATES, Victim


class WeighedVictims:
    """Running work, cheapest to evict first, weighed as victims for one kind of request
    (``weigh``: its reason, and the share bound of a fair-share reclaim), as far as a search
    has asked: most searches stop at the first MAX_CANDIDATES."""

    def __init__(
        self,
        *,
        workloads: Iterator[RunningWorkload],
        weigh: Callable[[RunningWorkload], tuple[str | None, float | None] | None],
    ) -> None:
        self._workloads = workloads
        self._weigh = weigh
        self._victims: list[tuple[RunningWorkload, str | None, float | None]] = []

    def candidates(self, share_after: float | None) -> list[Victim]:
        """The cheapest MAX_CANDIDATES victims of a request whose tenant would then hold
        ``share_after`` of lent capacity (None: it borrows nothing)."""
        candidates: list[Victim] = []
        position = 0
        while len(candidates) < MAX_CANDIDATES:
            if position == len(self._victims) and not self._weigh_next():
                break
            workload, reason, share_left = self._victims[position]
            position += 1
            if share_left is not None and share_after is not None and share_after <= share_left:
                reason = "fair-share"
            if reason is not None:
                candidates.append(Victim(workload=workload, reason=reason))
        return candidates

    def _weigh_next(self) -> bool:
        """Weigh running work until one more may be a victim; False when none is left."""
        for workload in self._workloads:
            weighed = self._weigh(workload)
            if weighed is not None:
                self._victims.append((workload, *weighed))
                return True
        return False
