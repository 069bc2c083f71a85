"""The timeline of a workload: what happened to it and why, as its users read it."""

from portal import clock

from ..models import Workload, WorkloadEvent


def workload_event(workload: Workload, kind: str, message: str, *, at, **data) -> WorkloadEvent:
    """An unsaved timeline event, for writing many at once."""
    return WorkloadEvent(workload=workload, at=at, kind=kind, message=message[:500], data=data)


def workload_event_record(workload: Workload, kind: str, message: str, **data) -> WorkloadEvent:
    event = workload_event(workload, kind, message, at=clock.now(), **data)
    event.save()
    return event
