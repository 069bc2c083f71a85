"""Reservations: held capacity is the owner's first; others only use it as preemptible."""

from datetime import timedelta

from scheduling.engine import Reservation

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
