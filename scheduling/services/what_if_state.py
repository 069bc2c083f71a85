"""The state a cycle leaves for what-ifs: kept by the cycle in its transaction, read by the
what-if (scheduling.services.what_if) while it is fresh."""

import pickle
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db.models import Count, Q

from .. import engine
from ..models import CycleEndState, Node, Placement


def cluster_fingerprint() -> str:
    """What changes when the cluster does between cycles: nodes joining, leaving or cordoned,
    and running work ending (admissions happen only in cycles, which keep a new state)."""
    nodes = Node.objects.filter(ready=True).aggregate(
        ready=Count("pk"), cordoned=Count("pk", filter=Q(cordoned=True))
    )
    running = Placement.objects.filter(ended_at__isnull=True).count()
    return f"nodes {nodes['ready']} cordoned {nodes['cordoned']} placements {running}"


def cycle_end_keep(end: engine.CycleEnd) -> None:
    """Keep what the cycle left (in its transaction: the state and its decisions commit
    together)."""
    CycleEndState.objects.update_or_create(
        pk=1,
        defaults={
            "decided_at": end.decided_at,
            "fingerprint": cluster_fingerprint(),
            "state": pickle.dumps(end, protocol=pickle.HIGHEST_PROTOCOL),
        },
    )


@dataclass(frozen=True)
class KeptEnd:
    end: engine.CycleEnd
    decided_at: object
    fingerprint: str


# Per process: the last state read, so that only the first what-if after a cycle unpickles it.
_last: dict[str, KeptEnd] = {}


def cycle_end_fresh(*, now) -> tuple[engine.CycleEnd | None, str]:
    """The state the last cycle kept, if it is fresh, or None and why not."""
    row = CycleEndState.objects.filter(pk=1).values("decided_at", "fingerprint").first()
    if row is None:
        return None, "No scheduling cycle has run yet."
    age = now - row["decided_at"]
    if age > timedelta(seconds=settings.PORTAL_WHAT_IF_MAX_AGE_SECONDS):
        return None, f"The last scheduling cycle ran {int(age.total_seconds())} s ago."
    if row["fingerprint"] != cluster_fingerprint():
        return None, "The cluster changed since the last scheduling cycle."
    kept = _last.get("end")
    if kept is None or (kept.decided_at, kept.fingerprint) != tuple(row.values()):
        state = CycleEndState.objects.values_list("state", flat=True).get(pk=1)
        kept = _last["end"] = KeptEnd(end=pickle.loads(bytes(state)), **row)
    return kept.end, ""
