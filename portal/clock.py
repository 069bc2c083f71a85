"""The portal's one clock: nothing else reads the time (tests/test_layers.py holds it).

`now()` is the portal's time: real UTC, plus the offset by which tests and the demo move the
simulated cluster forward, so that runtimes, deadlines, expiries and billing periods agree with
it. `wall()` is the machine's UTC time, for what must follow real time whatever the simulation
says: when a row was written, a worker's liveness, a rate limit's window. `monotonic()` measures
durations."""

import time
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone


def now() -> datetime:
    if settings.PORTAL_CLUSTER != "simulated":
        return wall()
    from .models import SimulatedClock

    offset = SimulatedClock.objects.values_list("offset_seconds", flat=True).first() or 0
    return wall() + timedelta(seconds=offset)


def wall() -> datetime:
    return timezone.now()


def monotonic() -> float:
    return time.monotonic()


def advance(*, seconds: float) -> datetime:
    """Move the simulated time forward (tests, the demo); the new now."""
    from .models import SimulatedClock

    clock, _ = SimulatedClock.objects.get_or_create(pk=1)
    SimulatedClock.objects.filter(pk=clock.pk).update(offset_seconds=clock.offset_seconds + seconds)
    return now()
