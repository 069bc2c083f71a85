"""The portal's clock for scheduling: real UTC time, plus the offset by which tests and the
demo move the simulated cluster forward, so that runtimes, deadlines and idleness agree with it."""

from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from .models import SimulatedClock


def now() -> datetime:
    if settings.PORTAL_CLUSTER != "simulated":
        return timezone.now()
    offset = SimulatedClock.objects.values_list("offset_seconds", flat=True).first() or 0
    return timezone.now() + timedelta(seconds=offset)


def advance(*, seconds: float) -> datetime:
    """Move the simulated time forward (tests, the demo); the new now."""
    clock, _ = SimulatedClock.objects.get_or_create(pk=1)
    SimulatedClock.objects.filter(pk=clock.pk).update(offset_seconds=clock.offset_seconds + seconds)
    return now()
