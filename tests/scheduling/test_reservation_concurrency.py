"""Reservation requests racing for the last GPUs of a pool on PostgreSQL: never overbooked."""

from datetime import timedelta

import pytest
from django.db import connection

from portal import clock
from portal.errors import Conflict
from scheduling import services
from scheduling.models import Reservation
from scheduling.services import ReservationRequest
from tenants.permissions import Caller

from ..threads import run_together

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("concurrent transactions are raced on PostgreSQL; set DATABASE_URL")


def test_fifty_requests_for_the_last_eight_gpus_accept_exactly_eight(cluster, alice, acme):
    start = clock.now().replace(minute=0, second=0, microsecond=0) + timedelta(days=1)

    def request(gpus: int):
        return lambda: services.reservations_request(
            caller=Caller(user=alice),
            organization=acme,
            request=ReservationRequest(
                gpu_class="H100-80GB",
                gpus=gpus,
                starts_at=start,
                ends_at=start + timedelta(hours=4),
                pool="dgx-h100",
            ),
        )

    request(56)()  # of the pool's 64
    outcomes = run_together(*[request(1)] * 50)
    accepted = [o for o in outcomes if isinstance(o, list)]
    refused = [o for o in outcomes if isinstance(o, Conflict)]
    held = sum(Reservation.objects.values_list("gpus", flat=True))
    assert (len(accepted), len(refused), held) == (8, 42, 64)
