"""The timeline of a workload: what happened to it and why, as its users read it."""

from portal import clock

from ..models import Workload, WorkloadEvent

# What `event_row` gives, in its order (for portal.db.values_insert).
EVENT_FIELDS = ("workload", "at", "kind", "message", "data")


def event_row(workload_id, kind: str, message: str, *, at, **data) -> tuple:
    """An event as the values of EVENT_FIELDS, for writing thousands at once."""
    return (workload_id, at, kind, message[:500], data)


def workload_event(workload: Workload, kind: str, message: str, *, at, **data) -> WorkloadEvent:
    """An unsaved timeline event, for writing many at once."""
    _, at, kind, message, data = event_row(workload.pk, kind, message, at=at, **data)
    return WorkloadEvent(workload=workload, at=at, kind=kind, message=message, data=data)


def workload_event_record(workload: Workload, kind: str, message: str, **data) -> WorkloadEvent:
    event = workload_event(workload, kind, message, at=clock.now(), **data)
    event.save()
    return event
