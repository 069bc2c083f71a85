"""The timeline of a workload: what happened to it and why, as its users read it."""

from .. import clock
from ..models import (
    Workload,
    WorkloadEvent,
)


def workload_event_record(workload: Workload, kind: str, message: str, **data) -> WorkloadEvent:
    return WorkloadEvent.objects.create(
        workload=workload, at=clock.now(), kind=kind, message=message[:500], data=data
    )
