"""The engine's requests of the waiting workloads, made once per workload rather than once per
cycle: ten thousand of them cost a twentieth of a cycle to make, and they rarely change."""

from .. import engine
from ..specs_from_models import WorkloadRow, engine_request

# WorkloadRow's own fields that a request is made of (kind to evictions: the workload's
# demand and contract, not its place in the queue, which every cycle rewrites).
_REQUEST_FIELDS = slice(
    WorkloadRow._fields.index("kind"), WorkloadRow._fields.index("evictions") + 1
)

# The last cycle's requests by workload id, each with what it was made of. One process runs
# a cycle at a time; a what-if without a kept state reads the same rows.
_made: dict = {}


def engine_requests(
    rows: list[WorkloadRow], *, tolerations: tuple[engine.Toleration, ...]
) -> list[engine.Request]:
    """``engine_request`` of each row, the last cycle's request where the row, its project,
    organization and tier and the tolerations are what it was made of."""
    made = {}
    requests = []
    for row in rows:
        tier, project = row.tier, row.project
        source = (
            row[_REQUEST_FIELDS],
            row.submitted_at,
            project.slug,
            project.organization.slug,
            tier.value,
            tier.min_run_time,
            tier.max_evictions,
            tolerations,
        )
        kept = _made.get(row.pk)
        if kept is not None and kept[0] == source:
            request = kept[1]
        else:
            request = engine_request(row, tolerations=tolerations)
        made[row.pk] = (source, request)
        requests.append(request)
    # Only the workloads still waiting stay: the cache never outgrows the queue.
    _made.clear()
    _made.update(made)
    return requests


def forget() -> None:
    """Drop the requests kept (a benchmark's first cycle makes them all)."""
    _made.clear()
