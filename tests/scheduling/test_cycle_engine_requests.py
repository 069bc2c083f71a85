"""A waiting workload's engine request is made once and kept from cycle to cycle, but never
outlives a change to what it was made of."""

import pytest

from scheduling.models import Workload

pytestmark = pytest.mark.django_db


def test_a_waiting_workload_whose_demand_changed_is_weighed_as_it_now_is(waiting_for_h100, cycle):
    waits = Workload.objects.get(name="waits")
    cycle()  # still waiting: its request is kept from the last cycle
    assert waits.state == Workload.State.PENDING
    Workload.objects.filter(pk=waits.pk).update(gpu_classes=["H100-80GB", "A100-80GB"])
    cycle()
    waits.refresh_from_db()
    assert (waits.state, waits.gpu_class.name) == (Workload.State.ADMITTED, "A100-80GB")
