"""The allocation rule (``billing.allocation``) on small pools worked by hand: each category
is what the rule says, in GPU-hours of a 2-hour period."""

from datetime import UTC, datetime, timedelta

import pytest

from billing.allocation import MILLI, UNITS_PER_GPU, Layer, Span, Work, allocate

START = datetime(2026, 11, 2, tzinfo=UTC)
END = START + timedelta(hours=2)
HOUR = 3600 * 10**6
ACME, GLOBEX = ("acme", None), ("globex", None)


def hours(allocation, category) -> float:
    return allocation.totals[category] / (UNITS_PER_GPU * HOUR)


def pool(*, gpus=8, holdings=(), uses=(), guarantees=(), down=0) -> Layer:
    capacity = [Span(gpus * MILLI, START, None)]
    if down:
        capacity.append(Span(down * MILLI, START, None, available=False))
    return Layer(
        weight=7,
        capacity=capacity,
        holdings=list(holdings),
        uses=Work.of(list(uses)),
        guarantees=list(guarantees),
    )


def test_an_empty_pool_is_all_unallocated_idle():
    allocation = allocate(layers=[pool()], start=START, end=END)
    assert hours(allocation, "unallocated_idle") == 16
    assert allocation.total == 16 * UNITS_PER_GPU * HOUR


def test_a_cordoned_nodes_hours_are_unavailable():
    allocation = allocate(layers=[pool(down=8)], start=START, end=END)
    assert hours(allocation, "unavailable") == 16
    assert hours(allocation, "unallocated_idle") == 16


def test_a_guests_work_beyond_the_unreserved_gpus_is_lent_from_the_idle_reservation():
    held = Span(6 * MILLI, START, END, owner=ACME, key="r1")
    guest = Span(4 * MILLI, START, END, owner=GLOBEX)
    allocation = allocate(layers=[pool(holdings=[held], uses=[guest])], start=START, end=END)
    assert hours(allocation, "used_billed") == 4  # 2 unreserved GPUs for 2 hours
    assert hours(allocation, "reserved_lent") == 4
    assert hours(allocation, "reserved_idle") == 8
    assert allocation.reservations["r1"]["lent"] == 4 * UNITS_PER_GPU * HOUR


def test_the_holders_own_work_fills_its_reservation_first():
    held = Span(4 * MILLI, START, END, owner=ACME, key="r1")
    own = Span(6 * MILLI, START, END, owner=ACME)
    allocation = allocate(layers=[pool(holdings=[held], uses=[own])], start=START, end=END)
    assert hours(allocation, "reserved_used") == 8
    assert hours(allocation, "used_billed") == 4
    assert allocation.on_demand[(*ACME, None)] == 4 * UNITS_PER_GPU * HOUR


def test_an_unused_guarantee_is_granted_quota_idle_up_to_what_is_free():
    guarantee = Span(3 * MILLI, START, END, owner=GLOBEX)
    used = Span(1 * MILLI, START, END, owner=GLOBEX)
    allocation = allocate(layers=[pool(guarantees=[guarantee], uses=[used])], start=START, end=END)
    assert hours(allocation, "guarantee_idle") == 4
    assert hours(allocation, "unallocated_idle") == 10
    assert allocation.guarantees[GLOBEX] == 4 * UNITS_PER_GPU * HOUR


def test_an_owner_with_two_guarantees_gets_the_idle_of_both_when_free_capacity_is_short():
    others = Span(6 * MILLI, START, END, owner=("hooli", None))
    guarantees = [
        Span(2 * MILLI, START, END, owner=ACME),
        Span(2 * MILLI, START, END, owner=ACME),
        Span(2 * MILLI, START, END, owner=GLOBEX),
    ]
    allocation = allocate(layers=[pool(uses=[others], guarantees=guarantees)], start=START, end=END)
    assert allocation.guarantees[ACME] == 2 * allocation.guarantees[GLOBEX]


def test_a_mig_instance_carries_its_slices_of_a_gpu():
    instances = Layer(
        weight=3,  # mig-3g.40gb: three slices of seven
        capacity=[Span(2 * MILLI, START, None)],
        uses=Work.of([Span(1 * MILLI, START, END, owner=ACME)]),
    )
    allocation = allocate(layers=[instances], start=START, end=END)
    assert allocation.totals["used_billed"] == 2 * 3 * MILLI * HOUR
    assert allocation.total == 2 * 2 * 3 * MILLI * HOUR


def test_work_recorded_beyond_the_available_capacity_is_kept_within_it():
    too_much = Span(12 * MILLI, START, END, owner=GLOBEX)
    allocation = allocate(layers=[pool(uses=[too_much])], start=START, end=END)
    assert hours(allocation, "used_billed") == 16
    assert allocation.total == 16 * UNITS_PER_GPU * HOUR


def test_on_demand_work_is_counted_per_organization_project_and_tier():
    batch = Span(2 * MILLI, START, END, owner=GLOBEX, tier="batch")
    training = Span(1 * MILLI, START, END, owner=GLOBEX, tier="training")
    allocation = allocate(layers=[pool(uses=[batch, training])], start=START, end=END)
    assert allocation.on_demand[(*GLOBEX, "batch")] == 4 * UNITS_PER_GPU * HOUR
    assert allocation.on_demand[(*GLOBEX, "training")] == 2 * UNITS_PER_GPU * HOUR


def test_guarantees_share_too_little_free_capacity_in_proportion_to_what_each_left_unused():
    others = Span(6 * MILLI, START, END, owner=("hooli", None))
    guarantees = [
        Span(4 * MILLI, START, END, owner=ACME),
        Span(2 * MILLI, START, END, owner=GLOBEX),
    ]
    allocation = allocate(layers=[pool(uses=[others], guarantees=guarantees)], start=START, end=END)
    assert hours(allocation, "guarantee_idle") == 4
    assert allocation.guarantees[ACME] == 2 * allocation.guarantees[GLOBEX]


# 100,000 GPUs: each piece's level times its hour fits 64 bits, their month's sum does not;
# 3,000,000: not even one piece's product does.
@pytest.mark.parametrize("gpus", [100_000, 3_000_000])
def test_a_month_of_a_huge_pool_adds_up_exactly_past_64_bits(gpus):
    month_end = START + timedelta(days=30)
    work = Span(gpus // 2 * MILLI, START, month_end, owner=ACME)
    layer = Layer(weight=7, capacity=[Span(gpus * MILLI, START, None)], uses=Work.of([work]))
    allocation = allocate(layers=[layer], start=START, end=month_end)
    month = 30 * 24 * HOUR
    assert allocation.total == gpus * UNITS_PER_GPU * month
    assert allocation.total > 2**63
    assert allocation.totals["used_billed"] == gpus // 2 * UNITS_PER_GPU * month
