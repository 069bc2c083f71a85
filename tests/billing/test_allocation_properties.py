"""On random histories of a pool (its nodes going down and being cordoned, reservations, work
of whole GPUs, shares and MIG instances, guarantees changing mid-period), read from the
database as the books read them: every GPU-hour of the pool is attributed exactly once, to the
microsecond."""

from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from billing.allocation import CATEGORIES, MILLI, SLICES_PER_GPU
from billing.models import UsageInterval
from billing.selectors import pool_allocation
from scheduling.models import (
    Node,
    NodeAvailability,
    NodePool,
    Placement,
    QuotaGrant,
    QuotaGrantHistory,
    Reservation,
    Workload,
)
from scheduling.services import quota_grant_history_record

from ..factories import ProjectFactory
from .conftest import at, guaranteed, ran
from .histories import availability_recorded

pytestmark = pytest.mark.django_db

PROPERTY = settings(
    deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
MICRO = timedelta(microseconds=1)
STATES = [s for s, _ in NodeAvailability.State.choices]
# A moment: minutes around the 5-hour period, and microseconds.
moment = st.tuples(st.integers(min_value=-60, max_value=360), st.integers(0, 999_999)).map(
    lambda m: at(m[0] / 60) + m[1] * MICRO
)
# A node's history: (moment, state) changes.
history = st.lists(st.tuples(moment, st.sampled_from(STATES)), min_size=1, max_size=4)
# Work: who, what (GPUs, a share's milli-GPU, a profile's instances), from, to (None: running).
work = st.tuples(
    st.sampled_from(["acme", "vision", "globex"]),
    st.one_of(
        st.tuples(st.just("gpus"), st.integers(1, 4)),
        st.tuples(st.just("shared"), st.integers(1, 999)),
        st.tuples(st.just("mig"), st.integers(1, 6)),
    ),
    moment,
    st.one_of(st.none(), moment),
)
window = st.tuples(
    st.sampled_from(["acme", "vision"]),
    st.sampled_from(["", "mig-3g.40gb"]),
    st.integers(1, 3),
    moment,
    moment,
)
PROFILE = "mig-1g.10gb"


def _capacity_expected(spans, start, end) -> int:
    """The pool's unit-microseconds, from the spans directly."""
    total = 0
    for span in spans:
        lasted = (min(span.ends_at or end, end) - max(span.starts_at, start)) // MICRO
        units = span.gpu_count * SLICES_PER_GPU * MILLI + sum(
            count * int(p.removeprefix("mig-").split("g")[0]) * MILLI
            for p, count in span.mig_layout.items()
        )
        total += max(lasted, 0) * units
    return total


@pytest.mark.slow
@PROPERTY
@given(
    histories=st.lists(history, min_size=1, max_size=3),
    works=st.lists(work, max_size=6),
    windows=st.lists(window, max_size=3),
    guarantees=st.lists(
        st.tuples(st.sampled_from(["acme", "globex"]), st.integers(1, 8), moment, moment),
        max_size=2,
        unique_by=lambda g: g[0],
    ),
)
def test_every_gpu_hour_of_the_pool_is_attributed_once(
    cluster, acme, globex, vision, histories, works, windows, guarantees
):
    for model in (
        UsageInterval,
        Placement,
        Workload,
        Reservation,
        NodeAvailability,
        QuotaGrantHistory,
        QuotaGrant,
    ):
        model.objects.all().delete()
    pool = NodePool.objects.get(name="a100-mig")
    nodes = list(Node.objects.filter(pool=pool).order_by("name"))
    for node, changes in zip(nodes, histories, strict=False):
        availability_recorded(node, sorted(dict(changes).items()))
    projects = {
        "acme": ProjectFactory(organization=acme),
        "vision": vision,
        "globex": ProjectFactory(organization=globex),
    }
    for index, (who, (resource, amount), first, second) in enumerate(works):
        start, end = (first, second) if second is None else sorted((first, second))
        placement = ran(projects[who], start=0, end=None, mig=(PROFILE, 1), name=f"w{index}")
        UsageInterval.objects.create(
            placement=placement,
            organization=placement.workload.project.organization,
            project=placement.workload.project,
            workload=placement.workload,
            pool=pool.name,
            gpu_class=pool.gpu_class,
            mig_profile=PROFILE if resource == "mig" else "",
            resource=resource,
            amount=amount,
            tier=placement.workload.tier,
            started_at=start,
            ended_at=end if end != start else None,
        )
    for who, profile, gpus, first, second in windows:
        if first != second:
            Reservation.objects.create(
                organization=acme,
                project=vision if who == "vision" else None,
                gpu_class=pool.gpu_class,
                pool=pool,
                gpus=gpus,
                mig_profile=profile,
                starts_at=min(first, second),
                ends_at=max(first, second),
                state=Reservation.State.ACTIVE,
            )
    for who, guarantee, first, second in guarantees:
        # In force from one moment, changed to half at another: grants change mid-period.
        grant = guaranteed(
            acme if who == "acme" else globex, pool.gpu_class, guarantee, since=first
        )
        if second > first:
            grant.guarantee = grant.limit = guarantee // 2
            grant.save()
            quota_grant_history_record(grant=grant, now=second)
    start, end = at(0), at(5)

    allocation = pool_allocation(pool=pool, starts_at=start, ends_at=end)

    assert set(allocation.totals) == set(CATEGORIES)
    assert all(value >= 0 for value in allocation.totals.values())
    assert allocation.total == _capacity_expected(NodeAvailability.objects.all(), start, end)
    assert sum(allocation.guarantees.values()) == allocation.totals["guarantee_idle"]
