"""Cycles racing each other on PostgreSQL: the advisory lock lets one decide at a time."""

import threading
from collections import Counter

import pytest
from django.db import connection

from scheduling import services
from scheduling.models import Placement, QuotaGrant

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("advisory locks are PostgreSQL's; set DATABASE_URL (see README)")


def cycles_racing(count: int) -> list[services.CycleResult]:
    """``count`` cycles started at once, each on its own connection; their results."""
    barrier = threading.Barrier(count)
    results = []

    def run():
        barrier.wait()
        try:
            results.append(services.scheduling_cycle_run())
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def test_concurrent_cycles_never_hand_out_a_gpu_twice(submit):
    for n in range(12):
        submit(name=f"w{n}", gpus=8)
    results = cycles_racing(3)
    used = Counter(
        (p.node_id, index)
        for p in Placement.objects.filter(ended_at__isnull=True)
        for index in p.gpu_indices
    )
    assert max(used.values()) == 1
    assert sum(len(r.admitted) for r in results) == 8


def test_concurrent_cycles_never_take_a_tenant_over_a_regions_cap(submit):
    QuotaGrant.objects.filter(
        organization__slug="acme", gpu_class__name="L4", resource="gpus"
    ).update(region_limits={"us-east": 3})
    for n in range(8):
        submit(name=f"serve-{n}", gpu_classes=("L4",), gpus=1)
    cycles_racing(3)
    placements = Placement.objects.filter(ended_at__isnull=True, node__pool__gpu_class__name="L4")
    assert sum(len(p.gpu_indices) for p in placements) == 3
