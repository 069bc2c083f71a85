"""The capacity calendar's proposals against the reservation service: what it proposes, the
service accepts on an unchanged cluster."""

from contextlib import suppress
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from portal import clock
from portal.errors import Conflict
from scheduling import selectors, services
from scheduling.models import Reservation
from tenants.permissions import Caller

from .capacity import reserve_hours

pytestmark = pytest.mark.django_db

bookings = st.lists(
    st.tuples(st.integers(0, 30), st.integers(1, 12), st.integers(1, 64)), max_size=5
)


@settings(
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    booked=bookings,
    gpus=st.integers(1, 16),
    level=st.sampled_from(selectors.LEVELS),
    length=st.integers(1, 12),
)
def test_every_proposed_window_is_accepted_by_the_reservation_service(
    cluster, bruno, globex, alice, acme, booked, gpus, level, length
):
    Reservation.objects.all().delete()
    for from_hours, hours, amount in booked:
        # One that finds the pool full is refused; the calendar shows the others.
        with suppress(Conflict):
            reserve_hours(bruno, globex, from_hours=from_hours, hours=hours, gpus=amount)
    block = selectors.BlockAsk(gpus=gpus, level=level, hours=length)
    proposed = selectors.capacity_ahead(
        caller=Caller(user=alice),
        organization=acme,
        now=clock.now(),
        pool="dgx-h100",
        block=block,
    ).windows
    for proposal in proposed:
        [held] = services.reservations_request(
            caller=Caller(user=alice),
            organization=acme,
            request=services.ReservationRequest(
                gpu_class=proposal.window.gpu_class,
                gpus=gpus,
                starts_at=proposal.window.starts_at,
                ends_at=proposal.window.ends_at,
                pool=proposal.window.pool,
            ),
        )
        held.delete()  # the next one against the cluster as it was
    # A block of at most one node's GPUs always fits somewhere within 14 days of at most
    # 42 hours booked.
    assert proposed or (gpus > 8 and level == "node")


def test_the_calendar_shows_the_hours_a_proposal_would_hold_as_free(cluster, alice, acme):
    calendar = selectors.capacity_ahead(
        caller=Caller(user=alice),
        organization=acme,
        now=clock.now(),
        gpu_class="H100-80GB",
        block=selectors.BlockAsk(gpus=8, hours=3),
    )
    [pool] = calendar.pools
    first = calendar.windows[0].window
    hour = (first.starts_at - calendar.start) // timedelta(hours=1)
    assert (pool.free[hour : hour + 3] >= 8).all()
