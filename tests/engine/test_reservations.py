"""Reservations: held capacity is the owner's first; others only use it as preemptible."""

from dataclasses import replace
from datetime import timedelta

from scheduling.engine import ReplicaPlacement, Reservation

from .builders import NOW, admitted, cycle, node, on, quota, reason, request, running


def held_for(tenant, *, gpus=8, pool="dgx", hours_from_now=(-1, 5)):
    return Reservation(
        id=f"res-{tenant}",
        tenant=tenant,
        gpu_class="H100-80GB",
        gpus=gpus,
        pool=pool,
        starts_at=NOW + timedelta(hours=hours_from_now[0]),
        ends_at=NOW + timedelta(hours=hours_from_now[1]),
    )


QUOTAS = [quota("acme"), quota("globex")]


def test_another_tenant_cannot_take_reserved_capacity_as_non_preemptible():
    decisions = cycle(
        nodes=[node("a")],
        pending=[request("job", tenant="globex", gpus=2, preemptible=False)],
        quotas=QUOTAS,
        reservations=[held_for("acme")],
    )
    assert reason(decisions, "job").code == "reservation"


def test_the_reservation_sentence_names_the_owner():
    decisions = cycle(
        nodes=[node("a")],
        pending=[request("job", tenant="globex", gpus=2, preemptible=False)],
        quotas=QUOTAS,
        reservations=[held_for("acme")],
    )
    assert "reserved for acme" in reason(decisions, "job").message


def test_another_tenant_may_use_idle_reserved_capacity_as_preemptible():
    decisions = cycle(
        nodes=[node("a")],
        pending=[request("job", tenant="globex", gpus=2, preemptible=True)],
        quotas=QUOTAS,
        reservations=[held_for("acme")],
    )
    assert admitted(decisions) == ["job"]


def test_the_owner_uses_its_reserved_pool_first():
    decisions = cycle(
        nodes=[node("a", pool="shared"), node("b", pool="dgx")],
        pending=[request("job", tenant="acme", gpus=2)],
        quotas=QUOTAS,
        reservations=[held_for("acme", pool="dgx")],
    )
    assert decisions.admissions[0].placements[0].node == "b"


def test_an_expired_reservation_holds_nothing():
    decisions = cycle(
        nodes=[node("a")],
        pending=[request("job", tenant="globex", gpus=2, preemptible=False)],
        quotas=QUOTAS,
        reservations=[held_for("acme", hours_from_now=(-5, -1))],
    )
    assert admitted(decisions) == ["job"]


def test_the_owner_evicts_others_from_its_reserved_capacity():
    guest = running(request("guest", tenant="globex", gpus=8), on("a", *range(8)))
    decisions = cycle(
        nodes=[node("a", free=[0] * 8)],
        pending=[request("owner-job", tenant="acme", gpus=8)],
        running=[guest],
        quotas=QUOTAS,
        reservations=[held_for("acme")],
    )
    assert [(p.victim_id, p.reason) for p in decisions.preemptions] == [("guest", "reservation")]


def before_window(max_runtime: timedelta | None):
    """globex asks for 2 GPUs of non-preemptible work; acme's 8 are reserved from in 2 hours."""
    job = request("job", tenant="globex", gpus=2, preemptible=False, max_runtime=max_runtime)
    return cycle(
        nodes=[node("a")],
        pending=[job],
        quotas=QUOTAS,
        reservations=[held_for("acme", hours_from_now=(2, 6))],
    )


def test_work_without_a_max_runtime_is_kept_off_capacity_reserved_from_later_today():
    waiting = reason(before_window(max_runtime=None), "job")
    assert (waiting.code, waiting.message) == (
        "reservation",
        "H100-80GB: 8 GPUs in pool dgx are reserved for acme from 2026-03-02T11:00:00+00:00;"
        " only preemptible work or work that ends before then may use them.",
    )


def test_work_that_ends_before_the_window_opens_may_use_the_reserved_capacity():
    assert admitted(before_window(max_runtime=timedelta(hours=1))) == ["job"]


def test_work_that_would_still_run_when_the_window_opens_waits():
    assert reason(before_window(max_runtime=timedelta(hours=3)), "job").code == "reservation"


def in_lead_time(guests, pending=(), **reservation_fields):
    """acme's 8 GPUs of pool dgx (node a) open in 10 minutes (the default lead time is 15);
    node b is in another pool."""
    fields = {"hours_from_now": (1 / 6, 6)} | reservation_fields
    lead_time = fields.pop("lead_time", None)
    reservation = replace(held_for("acme", **fields), lead_time=lead_time)
    busy = {p.node: set() for w in guests for p in w.placements}
    for workload in guests:
        for placement in workload.placements:
            busy[placement.node] |= set(placement.gpu_indices)
    nodes = [
        node(name, pool=pool, free=[0 if gpu in busy.get(name, ()) else 1000 for gpu in range(8)])
        for name, pool in (("a", "dgx"), ("b", "other"))
    ]
    return cycle(
        nodes=nodes,
        pending=list(pending),
        running=guests,
        quotas=QUOTAS,
        reservations=[reservation],
    )


def guest(name, *gpus, node_name="a", minutes_ago=30, **fields):
    return running(
        request(name, tenant="globex", gpus=len(gpus), **fields),
        on(node_name, *gpus),
        started_minutes_ago=minutes_ago,
    )


def test_preemptible_guests_are_drained_from_reserved_capacity_in_the_lead_time():
    decisions = in_lead_time([guest("guest", *range(8))], gpus=8)
    assert [(p.victim_id, p.preemptor_id, p.reservation_id) for p in decisions.preemptions] == [
        ("guest", None, "res-acme")
    ]


def test_guests_are_left_alone_before_the_lead_time():
    decisions = in_lead_time([guest("guest", *range(8))], hours_from_now=(2, 6))
    assert decisions.preemptions == ()


def test_a_reservations_own_lead_time_overrides_the_policys():
    decisions = in_lead_time(
        [guest("guest", *range(8))], hours_from_now=(2, 6), lead_time=timedelta(hours=3)
    )
    assert [p.victim_id for p in decisions.preemptions] == ["guest"]


def test_the_drain_evicts_only_what_the_window_needs_cheapest_first():
    guests = [guest("older", 0, 1, 2, 3, minutes_ago=90), guest("newer", 4, 5, 6, 7)]
    decisions = in_lead_time(guests, gpus=4)
    assert [p.victim_id for p in decisions.preemptions] == ["newer"]


def test_non_preemptible_guests_are_not_drained():
    firm = guest("firm", *range(8), preemptible=False, max_runtime=timedelta(minutes=40))
    assert in_lead_time([firm]).preemptions == ()


def test_new_preemptible_work_is_kept_off_capacity_being_drained():
    decisions = in_lead_time(
        [guest("elsewhere", *range(8), node_name="b", preemptible=False)],
        pending=[request("late", tenant="globex", gpus=4)],
    )
    waiting = reason(decisions, "late")
    assert (waiting.code, waiting.message) == (
        "reservation",
        "H100-80GB: 8 GPUs in pool dgx are reserved for acme from 2026-03-02T09:10:00+00:00;"
        " they are kept free for the window; only work that ends before then may use them.",
    )


def estimate_behind_a_window(max_runtime: timedelta):
    """acme's non-preemptible job waits for globex's 8 GPUs, free in an hour; initech holds
    them from in 2 hours to in 6."""
    busy = running(
        request("busy", tenant="globex", gpus=8, max_runtime=timedelta(hours=1)),
        on("a", *range(8)),
        started_minutes_ago=0,
    )
    decisions = cycle(
        nodes=[node("a", free=[0] * 8)],
        pending=[request("job", gpus=8, preemptible=False, max_runtime=max_runtime)],
        running=[busy],
        quotas=QUOTAS,
        reservations=[held_for("initech", hours_from_now=(2, 6))],
    )
    return reason(decisions, "job").estimated_start - NOW


def test_an_estimate_whose_run_would_overlap_another_tenants_window_moves_past_it():
    assert estimate_behind_a_window(timedelta(hours=2)) == timedelta(hours=6)


def test_an_estimate_whose_run_ends_before_the_window_stays():
    assert estimate_behind_a_window(timedelta(minutes=30)) == timedelta(hours=1)


def for_project(job_project: str):
    """acme's 8 GPUs are reserved for its project ai-prod; a firm acme job of ``job_project``
    asks for 2."""
    job = request("job", project=job_project, gpus=2, preemptible=False)
    return cycle(
        nodes=[node("a")],
        pending=[job],
        quotas=QUOTAS,
        reservations=[replace(held_for("acme"), project="ai-prod")],
    )


def test_a_project_reservation_keeps_the_tenants_other_projects_firm_work_off():
    assert reason(for_project("ai-dev"), "job").code == "reservation"


def test_a_project_reservation_is_used_by_its_own_projects_firm_work():
    assert admitted(for_project("ai-prod")) == ["job"]


# MIG instances are reserved by profile: separate capacity from the node's whole GPUs.

MIG = "mig-1g.10gb"
MIG_QUOTAS = [
    quota(tenant, gpus=gpus, **fields)
    for tenant in ("acme", "globex")
    for gpus, fields in ((8, {}), (14, {"mig_profile": MIG}))
]


def mig_cycle(pending, *, reserved_profile=MIG, reserved=7, running_=(), free_instances=14):
    """Node a: 8 whole GPUs and 14 instances of mig-1g.10gb; acme holds ``reserved`` of
    ``reserved_profile`` (whole GPUs if None) from an hour ago."""
    reservation = replace(held_for("acme", gpus=reserved), mig_profile=reserved_profile)
    return cycle(
        nodes=[node("a", mig_free={MIG: free_instances})],
        pending=pending,
        running=list(running_),
        quotas=MIG_QUOTAS,
        reservations=[reservation],
    )


def mig_request(name, tenant, count, **fields):
    return request(name, tenant=tenant, mig_profile=MIG, mig_count=count, **fields)


def test_another_tenant_cannot_take_reserved_mig_instances_as_non_preemptible():
    decisions = mig_cycle([mig_request("job", "globex", 8, preemptible=False)])
    waiting = reason(decisions, "job")
    assert (waiting.code, "7 mig-1g.10gb instances in pool dgx" in waiting.message) == (
        "reservation",
        True,
    )


def test_instances_the_reservation_leaves_free_may_be_taken():
    decisions = mig_cycle([mig_request("job", "globex", 7, preemptible=False)])
    assert admitted(decisions) == ["job"]


def test_a_mig_reservation_holds_no_whole_gpus():
    decisions = mig_cycle([request("job", tenant="globex", gpus=8, preemptible=False)])
    assert admitted(decisions) == ["job"]


def test_a_whole_gpu_reservation_holds_no_mig_instances():
    decisions = mig_cycle(
        [mig_request("job", "globex", 14, preemptible=False)], reserved_profile=None, reserved=8
    )
    assert admitted(decisions) == ["job"]


def test_the_owner_takes_its_reserved_mig_instances():
    decisions = mig_cycle([mig_request("job", "acme", 7, preemptible=False)])
    assert admitted(decisions) == ["job"]


def test_the_owners_running_instances_count_against_what_it_holds():
    """acme runs 7 instances inside its reservation of 7: nothing is held unused any more,
    so globex's firm work takes the other 7."""
    inside = running(
        mig_request("inside", "acme", 7),
        ReplicaPlacement(node="a", mig_profile=MIG, mig_count=7),
    )
    decisions = mig_cycle(
        [mig_request("job", "globex", 7, preemptible=False)], running_=[inside], free_instances=7
    )
    assert admitted(decisions) == ["job"]


def test_preemptible_mig_guests_are_drained_ahead_of_a_mig_window():
    guest_ = running(
        mig_request("guest", "globex", 14),
        ReplicaPlacement(node="a", mig_profile=MIG, mig_count=14),
    )
    reservation = replace(held_for("acme", gpus=7, hours_from_now=(1 / 6, 6)), mig_profile=MIG)
    decisions = cycle(
        nodes=[node("a", mig_free={MIG: 0})],
        running=[guest_],
        quotas=MIG_QUOTAS,
        reservations=[reservation],
    )
    assert [(p.victim_id, p.reservation_id) for p in decisions.preemptions] == [
        ("guest", "res-acme")
    ]
