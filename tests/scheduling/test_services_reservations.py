from datetime import timedelta

import pytest
from django.core import mail
from django.core.exceptions import ValidationError

from portal import clock
from portal.errors import Conflict, Forbidden
from scheduling import selectors, services, tasks
from scheduling.models import Node, Reservation, ReservationRule, Workload
from scheduling.services import ReservationRequest
from scheduling.specs_from_models import engine_reservations
from tenants.models import AuditEvent
from tenants.permissions import Caller

from ..factories import ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db

H100_POOL = "dgx-h100"  # 8 nodes of 8 GPUs in the demo cluster


def hours(n: float) -> timedelta:
    return timedelta(hours=n)


def ask(user, organization, *, gpus=16, start=24, length=4, **fields):
    """``gpus`` H100s of pool dgx-h100 from ``start`` hours from now, for ``length`` hours."""
    now = clock.now().replace(minute=0, second=0, microsecond=0)
    return services.reservations_request(
        caller=Caller(user=user),
        organization=organization,
        request=ReservationRequest(
            gpu_class=fields.pop("gpu_class", "H100-80GB"),
            gpus=gpus,
            starts_at=now + hours(start),
            ends_at=now + hours(start + length),
            pool=fields.pop("pool", H100_POOL),
            **fields,
        ),
    )


@pytest.fixture
def operator(db):
    return UserFactory(email="ops@example.com", is_staff=True)


def test_a_request_holds_the_gpus_awaiting_approval(cluster, alice, acme):
    [reservation] = ask(alice, acme)
    assert (reservation.state, reservation.gpus, reservation.pool.name) == (
        Reservation.State.REQUESTED,
        16,
        H100_POOL,
    )


def test_a_request_is_audited(cluster, alice, acme):
    [reservation] = ask(alice, acme)
    assert AuditEvent.objects.filter(action="reservation.request", target_id=str(reservation.pk))


def test_a_request_that_does_not_fit_names_the_short_period_and_amount(cluster, alice, acme):
    ask(alice, acme, gpus=60, start=24, length=4)
    with pytest.raises(Conflict) as refused:
        ask(alice, acme, gpus=8, start=26, length=4)
    short = refused.value.details["shortfalls"]
    assert [(s["gpus_short"], s["ends_at"] > s["starts_at"]) for s in short] == [(4, True)]


def test_a_refusal_proposes_the_nearest_windows_that_fit_before_and_after(cluster, alice, acme):
    held = ask(alice, acme, gpus=60, start=24, length=4)[0]
    with pytest.raises(Conflict) as refused:
        ask(alice, acme, gpus=8, start=26, length=4)
    details = refused.value.details
    assert (details["nearest_before"], details["nearest_after"]) == (
        (held.starts_at - hours(4)).isoformat(),
        held.ends_at.isoformat(),
    )


def test_back_to_back_windows_both_fit(cluster, alice, acme):
    ask(alice, acme, gpus=64, start=24, length=4)
    assert ask(alice, acme, gpus=64, start=28, length=4)


def test_a_rejected_or_cancelled_reservation_frees_its_gpus(cluster, alice, acme, operator):
    [held] = ask(alice, acme, gpus=64)
    services.reservation_cancel(caller=Caller(user=alice), reservation=held)
    assert ask(alice, acme, gpus=64)


def test_a_weekly_request_holds_every_week_in_one_series(cluster, alice, acme):
    reservations = ask(alice, acme, weeks=3)
    first = reservations[0].starts_at
    assert (
        len({r.series for r in reservations}),
        [r.starts_at - first for r in reservations],
    ) == (1, [timedelta(0), timedelta(weeks=1), timedelta(weeks=2)])


def test_a_weekly_request_is_all_or_none(cluster, alice, acme):
    ask(alice, acme, gpus=64, start=24 + 7 * 24 * 2)  # the third week is taken
    with pytest.raises(Conflict):
        ask(alice, acme, gpus=8, weeks=3)
    assert Reservation.objects.count() == 1


def test_without_a_pool_the_first_pool_of_the_class_that_fits_is_taken(cluster, alice, acme):
    [reservation] = ask(alice, acme, gpus=4, pool=None, gpu_class="L4")
    assert reservation.pool.name == "l4-inference"


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"start": -2}, "starts_at"),
        ({"length": -1}, "ends_at"),
        ({"length": 24 * 15}, "ends_at"),
        ({"gpus": 0}, "gpus"),
        ({"gpus": 65}, "gpus"),
        ({"gpu_class": "Z9"}, "gpu_class"),
        ({"pool": "l4-inference"}, "pool"),
        ({"weeks": 53}, "weeks"),
        ({"lead_time": timedelta(minutes=-1)}, "lead_time"),
    ],
)
def test_a_malformed_request_is_refused_on_its_field_and_nothing_is_held(
    cluster, alice, acme, fields, field
):
    with pytest.raises(ValidationError) as refused:
        ask(alice, acme, **fields)
    assert (field in refused.value.message_dict, Reservation.objects.count()) == (True, 0)


def test_another_tenants_project_is_refused_on_the_project_field(cluster, alice, acme, globex):
    ProjectFactory(organization=globex, slug="web")
    with pytest.raises(ValidationError) as refused:
        ask(alice, acme, project="web")
    assert list(refused.value.message_dict) == ["project"]


def test_a_member_may_not_reserve(cluster, mia, acme):
    with pytest.raises(Forbidden):
        ask(mia, acme)


def test_an_approval_is_mailed_to_the_requester(cluster, alice, acme, operator):
    [held] = ask(alice, acme)
    services.reservation_approve(caller=Caller(user=operator), reservation=held)
    services.reservation_email_send(reservation_id=str(held.pk))
    assert ([m.to for m in mail.outbox], "approved" in mail.outbox[0].subject) == (
        [[alice.email]],
        True,
    )


def test_a_new_request_is_mailed_to_the_operators_too(cluster, alice, acme, operator):
    [held] = ask(alice, acme)
    services.reservation_email_send(reservation_id=str(held.pk))
    assert sorted(m.to[0] for m in mail.outbox) == sorted([alice.email, operator.email])


def test_each_step_of_a_reservation_queues_its_mail(
    cluster, alice, acme, operator, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        [held] = ask(alice, acme)
        services.reservation_approve(caller=Caller(user=operator), reservation=held)
    mails = [c.keywords for c in callbacks if c.func == tasks.reservation_email_send.delay]
    assert mails == [
        {"reservation_id": str(held.pk), "change": change} for change in ("requested", "approved")
    ]


def test_only_an_operator_approves(cluster, alice, acme):
    [held] = ask(alice, acme)
    with pytest.raises(Forbidden):
        services.reservation_approve(caller=Caller(user=alice), reservation=held)


def test_a_rejection_needs_a_reason(cluster, alice, acme, operator):
    [held] = ask(alice, acme)
    with pytest.raises(ValidationError):
        services.reservation_reject(caller=Caller(user=operator), reservation=held, reason=" ")


def test_approving_twice_is_a_conflict(cluster, alice, acme, operator):
    [held] = ask(alice, acme)
    services.reservation_approve(caller=Caller(user=operator), reservation=held)
    with pytest.raises(Conflict):
        services.reservation_approve(caller=Caller(user=operator), reservation=held)


def test_time_opens_then_completes_an_approved_reservation(cluster, alice, acme, operator):
    [held] = ask(alice, acme, start=1, length=2)
    services.reservation_approve(caller=Caller(user=operator), reservation=held)
    states = []
    for advance in (hours(1), hours(3)):
        services.reservations_advance(now=clock.now() + advance)
        held.refresh_from_db()
        states.append(held.state)
    assert states == [Reservation.State.ACTIVE, Reservation.State.COMPLETED]


def test_a_request_never_approved_expires_when_its_window_begins(cluster, alice, acme):
    [held] = ask(alice, acme, start=1)
    services.reservations_advance(now=clock.now() + hours(1))
    held.refresh_from_db()
    assert held.state == Reservation.State.EXPIRED


def test_the_cycle_keeps_others_non_preemptible_work_off_an_approved_window(
    cluster, alice, acme, globex, bruno, operator, submit, cycle
):
    """acme holds all 64 H100s from in 1 hour; globex's production service (no maximum run
    time, not preemptible) waits instead of taking them."""
    from .conftest import h100_guarantee

    [held] = ask(alice, acme, gpus=64, start=1)
    services.reservation_approve(caller=Caller(user=operator), reservation=held)
    h100_guarantee(globex, 8)
    project = ProjectFactory(organization=globex, slug="web")
    serve = submit(
        name="serve", user=bruno, project=project, kind="inference", tier="inference-prod", gpus=8
    )
    cycle()
    serve.refresh_from_db()
    assert (serve.state, serve.pending_code) == (Workload.State.PENDING, "reservation")


def test_a_project_reservation_keeps_the_organizations_other_projects_firm_work_off(
    cluster, alice, acme, operator, submit, cycle
):
    ProjectFactory(organization=acme, slug="ai-prod")
    [held] = ask(alice, acme, gpus=64, start=1, project="ai-prod")
    services.reservation_approve(caller=Caller(user=operator), reservation=held)
    serve = submit(name="serve", kind="inference", tier="inference-prod", gpus=8)
    cycle()
    serve.refresh_from_db()
    assert (serve.state, serve.pending_code) == (Workload.State.PENDING, "reservation")


def test_a_request_within_the_organizations_rule_is_approved_at_once(cluster, alice, acme):
    ReservationRule.objects.create(organization=acme, max_gpus=16, max_hours=8)
    [held] = ask(alice, acme, gpus=16, length=8)
    assert held.state == Reservation.State.APPROVED


def test_a_request_beyond_the_organizations_rule_waits_for_an_operator(cluster, alice, acme):
    ReservationRule.objects.create(organization=acme, max_gpus=16, max_hours=8)
    [held] = ask(alice, acme, gpus=16, length=9)
    assert held.state == Reservation.State.REQUESTED


def cordon(operator, count: int) -> None:
    """Cordon ``count`` of the H100 pool's 8-GPU nodes, as an operator does for good."""
    for node in Node.objects.filter(pool__name=H100_POOL).order_by("name")[:count]:
        services.node_cordon(caller=Caller(user=operator), node=node)


def test_a_shrunk_pool_marks_the_latest_reservation_short_by_what_is_missing(
    cluster, alice, acme, operator
):
    [first] = ask(alice, acme, gpus=40)
    [second] = ask(alice, acme, gpus=24)
    cordon(operator, 2)  # 64 -> 48 GPUs
    services.reservations_recheck()
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.short_gpus, second.short_gpus) == (0, 16)


def test_an_approved_reservation_keeps_its_gpus_before_an_earlier_request(
    cluster, alice, acme, operator
):
    [asked] = ask(alice, acme, gpus=40)
    [approved] = ask(alice, acme, gpus=24)
    services.reservation_approve(caller=Caller(user=operator), reservation=approved)
    cordon(operator, 2)
    services.reservations_recheck()
    asked.refresh_from_db()
    approved.refresh_from_db()
    assert (approved.short_gpus, asked.short_gpus) == (0, 16)


def test_reservations_in_windows_apart_are_not_short_together(cluster, alice, acme, operator):
    ask(alice, acme, gpus=48, start=24, length=4)
    [later] = ask(alice, acme, gpus=48, start=30, length=4)
    cordon(operator, 2)
    services.reservations_recheck()
    later.refresh_from_db()
    assert later.short_gpus == 0


def test_a_shortfall_is_audited(cluster, alice, acme, operator):
    ask(alice, acme, gpus=64)
    cordon(operator, 1)
    services.reservations_recheck()
    assert AuditEvent.objects.filter(action="reservation.short").count() == 1


def test_a_shortfall_is_mailed_to_the_requester_and_the_operators(cluster, alice, acme, operator):
    [held] = ask(alice, acme, gpus=64)
    services.reservation_approve(caller=Caller(user=operator), reservation=held)
    cordon(operator, 1)
    services.reservations_recheck()
    mail.outbox.clear()
    services.reservation_email_send(reservation_id=str(held.pk), change="short")
    assert (
        sorted(m.to[0] for m in mail.outbox),
        {"8 of its 64 GPUs cannot be given" in m.body for m in mail.outbox},
    ) == (sorted([alice.email, operator.email]), {True})


def test_capacity_back_clears_the_shortfall(cluster, alice, acme, operator):
    [held] = ask(alice, acme, gpus=64)
    cordon(operator, 1)
    services.reservations_recheck()
    services.node_cordon(
        caller=Caller(user=operator), node=Node.objects.filter(cordoned=True).get(), cordoned=False
    )
    services.reservations_recheck()
    held.refresh_from_db()
    assert (held.short_gpus, AuditEvent.objects.filter(action="reservation.covered").count()) == (
        0,
        1,
    )


def test_the_beat_task_rechecks_the_pools(cluster, alice, acme, operator):
    [held] = ask(alice, acme, gpus=64)
    cordon(operator, 1)
    moved = tasks.reservations_advance()
    held.refresh_from_db()
    assert (moved["shortfall_changed"], held.short_gpus) == (1, 8)


def test_the_engine_holds_only_what_a_short_reservation_can_still_get(
    cluster, alice, acme, operator
):
    [held] = ask(alice, acme, gpus=64)
    cordon(operator, 3)
    services.reservations_recheck()
    held.refresh_from_db()
    assert [r.gpus for r in engine_reservations([held])] == [40]


# MIG instances are reserved by profile; the demo's a100-mig pool has 2 nodes, each with 4
# whole GPUs, 14 mig-1g.10gb and 4 mig-3g.40gb instances.

MIG_POOL = "a100-mig"


def ask_mig(user, organization, *, instances, profile="mig-1g.10gb", **fields):
    return ask(
        user,
        organization,
        gpus=instances,
        gpu_class="A100-80GB",
        pool=MIG_POOL,
        mig_profile=profile,
        **fields,
    )


def test_a_mig_reservation_holds_instances_of_its_profile(cluster, alice, acme):
    [held] = ask_mig(alice, acme, instances=28)
    assert (held.gpus, held.mig_profile, held.unit) == (28, "mig-1g.10gb", "mig-1g.10gb instances")


def test_mig_instances_beyond_what_the_pool_has_are_refused_in_instances(cluster, alice, acme):
    with pytest.raises(ValidationError) as refused:
        ask_mig(alice, acme, instances=9, profile="mig-3g.40gb")
    assert refused.value.message_dict["gpus"] == [
        "9 mig-3g.40gb instances, but pool a100-mig has 8."
    ]


def test_a_profile_the_class_does_not_have_is_refused_on_its_field(cluster, alice, acme):
    with pytest.raises(ValidationError) as refused:
        ask_mig(alice, acme, instances=1, profile="mig-2g.20gb")
    assert (list(refused.value.message_dict), Reservation.objects.count()) == (["mig_profile"], 0)


def test_mig_instances_and_whole_gpus_are_booked_apart(cluster, alice, acme):
    ask_mig(alice, acme, instances=28)
    [whole] = ask(alice, acme, gpus=8, gpu_class="A100-80GB", pool=MIG_POOL)
    assert whole.gpus == 8


def test_a_mig_window_that_does_not_fit_names_the_instances_short(cluster, alice, acme):
    ask_mig(alice, acme, instances=20)
    with pytest.raises(Conflict) as refused:
        ask_mig(alice, acme, instances=10)
    assert (str(refused.value.message).split(" from")[0], refused.value.details["pool"]) == (
        "a100-mig lacks 2 of the 10 mig-1g.10gb instances",
        MIG_POOL,
    )


def test_a_cordoned_mig_node_marks_the_mig_reservation_short_in_instances(
    cluster, alice, acme, operator
):
    [held] = ask_mig(alice, acme, instances=20)
    services.node_cordon(
        caller=Caller(user=operator), node=Node.objects.filter(pool__name=MIG_POOL).first()
    )
    services.reservations_recheck()
    held.refresh_from_db()
    assert held.short_gpus == 6


def test_the_engine_gets_the_reservations_profile(cluster, alice, acme):
    [held] = ask_mig(alice, acme, instances=4)
    [given] = engine_reservations([held])
    assert (given.mig_profile, given.gpus) == ("mig-1g.10gb", 4)


def test_the_timeline_has_a_row_per_mig_profile_the_pool_offers(cluster, alice, acme):
    ask_mig(alice, acme, instances=4)
    rows = services_timeline(alice, acme)
    assert [(r.mig_profile, r.capacity, r.free_by_day[1].free_gpus) for r in rows] == [
        ("", 8, 8),
        ("mig-1g.10gb", 28, 24),
        ("mig-3g.40gb", 8, 8),
    ]


def services_timeline(user, organization):
    return [
        row
        for row in selectors.reservation_timeline(
            caller=Caller(user=user), organization=organization, now=clock.now(), days=3
        )
        if row.pool.name == MIG_POOL
    ]


L4_POOL = "l4-inference"  # 16 L4 in the demo cluster


def test_a_weekly_series_whose_windows_overlap_may_not_hold_more_than_the_pool(
    cluster, alice, acme
):
    # Two weeks long, weekly: each window overlaps the next by a week, 32 of 16 GPUs there.
    with pytest.raises(Conflict) as refused:
        ask(alice, acme, gpus=16, gpu_class="L4", pool=L4_POOL, length=24 * 14, weeks=3)
    assert (refused.value.code, Reservation.objects.count()) == ("reservation_short", 0)


def test_a_weekly_series_whose_windows_overlap_fits_when_the_pool_holds_both(cluster, alice, acme):
    held = ask(alice, acme, gpus=8, gpu_class="L4", pool=L4_POOL, length=24 * 14, weeks=3)
    assert len(held) == 3


def test_a_window_more_than_five_years_ahead_is_refused_on_its_start(cluster, alice, acme):
    with pytest.raises(ValidationError) as refused:
        ask(alice, acme, start=24 * (5 * 366 + 1))
    assert refused.value.message_dict["starts_at"] == ["At most 5 years ahead."]


def test_a_series_whose_last_window_starts_more_than_five_years_ahead_is_refused_on_weeks(
    cluster, alice, acme
):
    with pytest.raises(ValidationError) as refused:
        ask(alice, acme, start=24 * (5 * 365 - 7), weeks=52)
    assert list(refused.value.message_dict) == ["weeks"]


def test_the_nearest_later_window_never_starts_past_the_booking_horizon(cluster, alice, acme):
    horizon = 24 * (5 * 365 + 1)  # hours from now (the hour)
    ask(alice, acme, gpus=64, start=horizon - 3, length=4)  # ends an hour past the horizon
    with pytest.raises(Conflict) as refused:
        ask(alice, acme, gpus=8, start=horizon - 2, length=4)
    assert refused.value.details["nearest_after"] is None
