"""Reservations of H100 by the whole hour, as the capacity calendar's tests make them."""

from datetime import datetime, timedelta

from portal import clock
from scheduling import services
from tenants.permissions import Caller


def next_hour() -> datetime:
    """The calendar's first hour: the next full hour (now, if now is one)."""
    now = clock.now()
    hour = now.replace(minute=0, second=0, microsecond=0)
    return hour if hour == now else hour + timedelta(hours=1)


def reserve_h100(user, organization, *, starts_at, ends_at, gpus: int, pool="dgx-h100"):
    """``gpus`` H100 of ``pool`` for ``organization`` over [starts_at, ends_at)."""
    return services.reservations_request(
        caller=Caller(user=user),
        organization=organization,
        request=services.ReservationRequest(
            gpu_class="H100-80GB", gpus=gpus, starts_at=starts_at, ends_at=ends_at, pool=pool
        ),
    )


def reserve_hours(user, organization, *, from_hours: int, hours: int, gpus: int, pool="dgx-h100"):
    """``reserve_h100`` from ``from_hours`` after the next full hour for ``hours`` hours; from
    hour 0, it starts a minute from now (not in the past) and holds the current hour too."""
    start = next_hour() + timedelta(hours=from_hours)
    starts_at = clock.now() + timedelta(minutes=1) if from_hours == 0 else start
    return reserve_h100(
        user,
        organization,
        starts_at=starts_at,
        ends_at=start + timedelta(hours=hours),
        gpus=gpus,
        pool=pool,
    )
