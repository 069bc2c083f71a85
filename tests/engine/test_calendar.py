"""The capacity calendar: free, reserved and busy GPUs per hour, and where a block of N GPUs
on one node or rack is free for a whole window."""

from dataclasses import dataclass
from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st

from scheduling.engine import Reservation
from scheduling.engine.calendar import HOUR, NODE, capacity_calendar, earliest_windows

from .builders import NOW, node, on, request, running

START = NOW.replace(minute=0) + HOUR
SPAN = 24


def reservation(gpus: int, *, from_hour: float, hours: float, pool: str = "dgx") -> Reservation:
    return Reservation(
        id=f"r{from_hour}-{gpus}",
        tenant="globex",
        gpu_class="H100-80GB",
        gpus=gpus,
        pool=pool,
        starts_at=START + from_hour * HOUR,
        ends_at=START + (from_hour + hours) * HOUR,
    )


def ending_in(hours: float | None, *gpus: int, node_name: str = "n0", job: str = "job"):
    """Running work on ``gpus`` of ``node_name`` expected to end ``hours`` after START (None:
    no max runtime)."""
    started = NOW - timedelta(minutes=30)
    runtime = None if hours is None else START + hours * HOUR - started
    return running(
        request(job, gpus=len(gpus), max_runtime=runtime),
        on(node_name, *gpus),
        started_minutes_ago=30,
    )


def used(gpus: int, *busy: int) -> list[int]:
    return [0 if i in busy else 1000 for i in range(gpus)]


def test_running_work_is_busy_until_its_max_runtime_ends():
    [calendar] = capacity_calendar(
        nodes=[node("n0", free=used(8, 0, 1))],
        running=[ending_in(3, 0, 1)],
        reservations=[],
        start=START,
        hours=6,
    )
    assert calendar.busy.tolist() == [2, 2, 2, 0, 0, 0]


def test_work_without_a_max_runtime_is_busy_to_the_end_of_the_span():
    [calendar] = capacity_calendar(
        nodes=[node("n0", free=used(8, 0))],
        running=[ending_in(None, 0)],
        reservations=[],
        start=START,
        hours=4,
    )
    assert calendar.busy.tolist() == [1, 1, 1, 1]


def test_a_reservation_holds_every_hour_it_overlaps():
    [calendar] = capacity_calendar(
        nodes=[node("n0")],
        running=[],
        reservations=[reservation(4, from_hour=1.5, hours=1)],
        start=START,
        hours=4,
    )
    assert calendar.reserved.tolist() == [0, 4, 4, 0]


def test_cordoned_nodes_are_not_in_the_calendar():
    [calendar] = capacity_calendar(
        nodes=[node("n0"), node("n1", cordoned=True)],
        running=[],
        reservations=[],
        start=START,
        hours=2,
    )
    assert calendar.schedulable == 8


def test_the_largest_block_on_one_rack_sums_its_nodes():
    nodes = [
        node("n0", free=used(8, 0, 1, 2, 3), topology={"rack": "r0"}),
        node("n1", free=used(8, 0, 1, 2, 3), topology={"rack": "r0"}),
    ]
    [calendar] = capacity_calendar(
        nodes=nodes,
        running=[ending_in(2, 0, 1, 2, 3), ending_in(2, 0, 1, 2, 3, node_name="n1", job="b")],
        reservations=[],
        start=START,
        hours=3,
        levels=("rack",),
    )
    assert (calendar.largest_block(NODE).tolist(), calendar.largest_block("rack").tolist()) == (
        [4, 4, 8],
        [8, 8, 16],
    )


def test_a_block_waits_for_the_running_work_on_its_node():
    calendars = capacity_calendar(
        nodes=[node("n0", free=used(8, 0, 1, 2, 3, 4, 5))],
        running=[ending_in(5, 0, 1, 2, 3, 4, 5)],
        reservations=[],
        start=START,
        hours=SPAN,
    )
    [window] = earliest_windows(calendars, gpus=8, level=NODE, length=2, count=1)
    assert window.starts_at == START + 5 * HOUR


def test_a_block_is_not_proposed_where_reservations_leave_the_pool_short():
    calendars = capacity_calendar(
        nodes=[node("n0"), node("n1")],
        running=[],
        reservations=[reservation(10, from_hour=0, hours=3)],
        start=START,
        hours=SPAN,
    )
    [window] = earliest_windows(calendars, gpus=8, level=NODE, length=1, count=1)
    assert window.starts_at == START + 3 * HOUR


def test_windows_are_the_starts_of_runs_of_fitting_hours():
    calendars = capacity_calendar(
        nodes=[node("n0")],
        running=[],
        reservations=[reservation(8, from_hour=2, hours=2)],
        start=START,
        hours=8,
    )
    windows = earliest_windows(calendars, gpus=8, level=NODE, length=1, count=3)
    assert [w.starts_at for w in windows] == [START, START + 4 * HOUR]


# Random small clusters: their work and reservations as plain facts, to check against.
@dataclass(frozen=True)
class Job:
    node: int
    gpus: tuple[int, ...]
    ends: int | None  # hours after START; None: no max runtime


@dataclass(frozen=True)
class Booking:
    starts: int
    length: int
    gpus: int


@st.composite
def clusters(draw):
    sizes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    jobs = []
    for index, size in enumerate(sizes):
        free = list(range(size))
        while free and draw(st.booleans()):
            take = draw(st.integers(1, len(free)))
            gpus, free = tuple(free[:take]), free[take:]
            jobs.append(Job(index, gpus, draw(st.none() | st.integers(0, 12))))
    capacity = sum(sizes)
    bookings = draw(
        st.lists(
            st.builds(Booking, st.integers(0, 10), st.integers(1, 6), st.integers(1, capacity)),
            max_size=3,
        )
    )
    return sizes, jobs, bookings


def calendars_of(sizes, jobs, bookings, *, hours=16):
    busy = {(job.node, gpu) for job in jobs for gpu in job.gpus}
    nodes = [
        node(
            f"n{i}",
            free=[0 if (i, g) in busy else 1000 for g in range(size)],
            topology={"rack": f"r{i % 2}"},
        )
        for i, size in enumerate(sizes)
    ]
    work = [
        ending_in(job.ends, *job.gpus, node_name=f"n{job.node}", job=f"j{k}")
        for k, job in enumerate(jobs)
    ]
    held = [reservation(b.gpus, from_hour=b.starts, hours=b.length) for b in bookings]
    return capacity_calendar(
        nodes=nodes, running=work, reservations=held, start=START, hours=hours, levels=("rack",)
    )


def idle_by_brute_force(sizes, jobs, hour: int, members: list[int]) -> int:
    """GPUs of the nodes ``members`` that no job still runs on at ``hour``."""
    return sum(
        1
        for i in members
        for g in range(sizes[i])
        if not any(j.node == i and g in j.gpus and (j.ends is None or j.ends > hour) for j in jobs)
    )


def pool_free_by_brute_force(sizes, jobs, bookings, hour: int) -> int:
    held = sum(b.gpus for b in bookings if b.starts <= hour < b.starts + b.length)
    return (
        sum(sizes)
        - held
        - (sum(sizes) - idle_by_brute_force(sizes, jobs, hour, [*range(len(sizes))]))
    )


def fits_by_brute_force(sizes, jobs, bookings, *, start, length, gpus, groups) -> bool:
    return any(
        all(
            idle_by_brute_force(sizes, jobs, h, members) >= gpus
            and pool_free_by_brute_force(sizes, jobs, bookings, h) >= gpus
            for h in range(start, start + length)
        )
        for members in groups
    )


@given(clusters())
def test_free_reserved_and_busy_add_up_to_the_schedulable_gpus_every_hour(cluster):
    [calendar] = calendars_of(*cluster)
    assert ((calendar.free + calendar.reserved + calendar.busy) == calendar.schedulable).all()
    assert (calendar.free >= 0).all() and (calendar.reserved >= 0).all()


@given(
    clusters(),
    st.integers(1, 8),
    st.integers(1, 4),
    st.sampled_from([NODE, "rack"]),
)
def test_the_earliest_block_is_the_first_really_free_for_its_whole_window(
    cluster, gpus, length, level
):
    sizes, jobs, bookings = cluster
    calendars = calendars_of(sizes, jobs, bookings)
    if level == NODE:
        groups = [[i] for i in range(len(sizes))]
    else:
        groups = [[i for i in range(len(sizes)) if i % 2 == r] for r in (0, 1)]
    expected = [
        start
        for start in range(16 - length + 1)
        if fits_by_brute_force(
            sizes, jobs, bookings, start=start, length=length, gpus=gpus, groups=groups
        )
    ]
    windows = earliest_windows(calendars, gpus=gpus, level=level, length=length, count=1)
    assert [(w.starts_at - START) // HOUR for w in windows] == expected[:1]
