from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from portal import clock
from scheduling import services
from scheduling.models import Reservation
from tenants.permissions import Caller

from ...roles import MANAGING
from ..capacity import reserve_h100

pytestmark = pytest.mark.django_db

URL = "/api/v1/organizations/acme/reservations/"


def window(start_hours: float = 24, length_hours: float = 4) -> dict:
    start = clock.now().replace(minute=0, second=0, microsecond=0) + timedelta(hours=start_hours)
    return {
        "starts_at": start.isoformat(),
        "ends_at": (start + timedelta(hours=length_hours)).isoformat(),
    }


def body(**fields) -> dict:
    return {"gpu_class": "H100-80GB", "gpus": 8, "pool": "dgx-h100", **window(), **fields}


@pytest.mark.parametrize(("caller", "status"), MANAGING)
def test_owners_and_admins_reserve_and_everyone_else_gets_what_their_role_allows(
    cluster, actors, api_as, caller, status
):
    response = api_as(actors.get(caller)).post(URL, body(), format="json")
    assert response.status_code == status


@pytest.mark.parametrize(
    ("caller", "status"),
    [("owner", 200), ("member", 200), ("viewer", 200), ("foreign", 404), ("outsider", 404)],
)
def test_every_member_sees_the_organizations_reservations(cluster, actors, api_as, caller, status):
    response = api_as(actors[caller]).get(URL)
    assert response.status_code == status


@pytest.fixture
def held(cluster, alice, acme):
    [reservation] = services.reservations_request(
        caller=Caller(user=alice),
        organization=acme,
        request=services.ReservationRequest(
            gpu_class="H100-80GB",
            gpus=60,
            starts_at=clock.now() + timedelta(days=1),
            ends_at=clock.now() + timedelta(days=1, hours=4),
            pool="dgx-h100",
        ),
    )
    return reservation


def test_another_tenants_reservation_is_a_404(held, bruno, api_as):
    assert (
        api_as(bruno).get(f"/api/v1/organizations/globex/reservations/{held.pk}/").status_code
        == 404
    )


def test_a_malformed_reservation_id_is_a_404(held, alice, api_as):
    assert api_as(alice).get(f"{URL}not-a-uuid/").status_code == 404


def test_a_window_that_does_not_fit_answers_409_with_the_shortfall_and_alternatives(
    held, alice, api_as
):
    response = api_as(alice).post(URL, body(**window(start_hours=25)), format="json")
    error = response.json()["error"]
    assert (response.status_code, error["code"], sorted(error["details"])) == (
        409,
        "reservation_short",
        ["nearest_after", "nearest_before", "pool", "shortfalls"],
    )


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"window": (-3, 4)}, "starts_at"),
        ({"window": (24, -1)}, "ends_at"),
        ({"gpus": 0}, "gpus"),
        ({"gpus": "8"}, "gpus"),
        ({"gpus": 1000}, "gpus"),
        ({"gpu_class": "Z9"}, "gpu_class"),
        ({"pool": "nope"}, "pool"),
        ({"project": "web"}, "project"),
        ({"weeks": 0}, "weeks"),
        ({"starts_at": "tomorrow"}, "starts_at"),
        ({"color": "red"}, "color"),
        ({"mig_profile": "mig-1g.10gb"}, "mig_profile"),
        ({"mig_profile": "1g"}, "mig_profile"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_holds_nothing(
    cluster, alice, api_as, fields, field
):
    if "window" in fields:
        fields = window(*fields.pop("window"))
    response = api_as(alice).post(URL, body(**fields), format="json")
    assert (response.status_code, field in response.json()["error"]["fields"]) == (400, True)
    assert Reservation.objects.count() == 0


def test_an_admin_cancels_and_the_gpus_are_free_again(held, adam, api_as):
    response = api_as(adam).post(f"{URL}{held.pk}/cancel/")
    assert (response.status_code, response.json()["state"]) == (200, "cancelled")


def test_a_member_may_not_cancel(held, mia, api_as):
    assert api_as(mia).post(f"{URL}{held.pk}/cancel/").status_code == 403


def test_the_timeline_shows_own_reservations_in_detail(held, alice, api_as):
    pools = api_as(alice).get("/api/v1/organizations/acme/reservation-timeline/?days=3").json()
    dgx = next(p for p in pools if p["pool"] == "dgx-h100")
    assert [(b["gpus"], b["own"], b["id"]) for b in dgx["blocks"]] == [(60, True, str(held.pk))]


def test_the_timeline_shows_others_reservations_as_anonymous_blocks(held, bruno, api_as):
    pools = api_as(bruno).get("/api/v1/organizations/globex/reservation-timeline/?days=3").json()
    dgx = next(p for p in pools if p["pool"] == "dgx-h100")
    assert [(b["gpus"], b["own"], b["id"], b["project"]) for b in dgx["blocks"]] == [
        (60, False, None, None)
    ]


def test_the_timeline_gives_the_free_gpus_of_each_day(cluster, alice, acme, api_as):
    today = clock_at_local(hour=10, zone=UTC)
    reserve(alice, acme, starts_at=today + timedelta(days=1), hours=4, gpus=60)
    pools = api_as(alice).get("/api/v1/organizations/acme/reservation-timeline/?days=3").json()
    dgx = next(p for p in pools if p["pool"] == "dgx-h100")
    assert [d["free_gpus"] for d in dgx["free_by_day"]] == [64, 4, 64]


def clock_at_local(*, hour: int, zone) -> datetime:
    """Move the simulated clock to half past ``hour`` tomorrow in ``zone``; that day's
    midnight there."""
    now = clock.now()
    target = (now.astimezone(zone) + timedelta(days=1)).replace(
        hour=hour, minute=30, second=0, microsecond=0
    )
    clock.advance(seconds=(target - now).total_seconds())
    return target.replace(hour=0, minute=0)


def reserve(user, organization, *, starts_at: datetime, hours: int, gpus: int = 8):
    return reserve_h100(
        user,
        organization,
        starts_at=starts_at,
        ends_at=starts_at + timedelta(hours=hours),
        gpus=gpus,
    )


def timeline_days(client, days: int = 3) -> list[tuple[str, int]]:
    pools = client.get(f"/api/v1/organizations/acme/reservation-timeline/?days={days}").json()
    dgx = next(p for p in pools if p["pool"] == "dgx-h100")
    return [(d["day"], d["free_gpus"]) for d in dgx["free_by_day"]]


def test_a_reservation_shows_on_the_calendar_day_it_is_on_not_the_24_hours_from_now(
    cluster, alice, acme, api_as
):
    # 15:30 today: tomorrow's 09:00 is within 24 hours, but on tomorrow's date.
    today = clock_at_local(hour=15, zone=UTC)
    reserve(alice, acme, starts_at=today + timedelta(days=1, hours=9), hours=4)
    assert timeline_days(api_as(alice)) == [
        (str(today.date()), 64),
        (str(today.date() + timedelta(days=1)), 56),
        (str(today.date() + timedelta(days=2)), 64),
    ]


def test_the_timelines_days_are_calendar_days_in_the_organizations_time_zone(
    cluster, alice, acme, api_as
):
    tokyo = ZoneInfo("Asia/Tokyo")
    acme.time_zone = "Asia/Tokyo"
    acme.save()
    # 15:30 in Tokyo (06:30 UTC); the reservation starts at 02:00 tomorrow there, 17:00 UTC
    # today.
    today = clock_at_local(hour=15, zone=tokyo)
    reserve(alice, acme, starts_at=today + timedelta(days=1, hours=2), hours=4)
    assert timeline_days(api_as(alice)) == [
        (str(today.date()), 64),
        (str(today.date() + timedelta(days=1)), 56),
        (str(today.date() + timedelta(days=2)), 64),
    ]


def test_a_timeline_of_too_many_days_is_a_400(cluster, alice, api_as):
    response = api_as(alice).get("/api/v1/organizations/acme/reservation-timeline/?days=91")
    assert (response.status_code, list(response.json()["error"]["fields"])) == (400, ["days"])


def test_mig_instances_are_reserved_and_answered_with_their_unit(cluster, alice, api_as):
    mig = {"gpu_class": "A100-80GB", "pool": "a100-mig", "mig_profile": "mig-3g.40gb", "gpus": 4}
    [made] = api_as(alice).post(URL, body(**mig), format="json").json()
    assert (made["gpus"], made["mig_profile"], made["unit"]) == (
        4,
        "mig-3g.40gb",
        "mig-3g.40gb instances",
    )


def test_a_weekly_series_that_would_overbook_the_pool_is_a_409_and_holds_nothing(
    cluster, alice, api_as
):
    # The whole L4 pool for two weeks, three weeks running: 32 of 16 GPUs in weeks 2 and 3.
    june = clock.now().replace(year=clock.now().year + 1, month=6, day=1, hour=0, minute=0)
    series = body(
        gpu_class="L4",
        pool="l4-inference",
        gpus=16,
        starts_at=june.isoformat(),
        ends_at=(june + timedelta(days=14)).isoformat(),
        weeks=3,
    )
    response = api_as(alice).post(URL, series, format="json")
    assert (response.status_code, Reservation.objects.count()) == (409, 0)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"starts_at": "9999-12-24T00:00:00Z", "ends_at": "9999-12-24T04:00:00Z"}, "starts_at"),
        (
            {"starts_at": "9999-01-01T00:00:00Z", "ends_at": "9999-01-01T04:00:00Z", "weeks": 52},
            "starts_at",
        ),
        ({"starts_at": "9999-12-31T23:00:00-05:00"}, "starts_at"),
        ({"starts_at": (datetime.now(UTC) + timedelta(days=5 * 366 + 2)).isoformat()}, "starts_at"),
    ],
)
def test_a_window_past_the_booking_horizon_is_a_400_on_its_field(
    cluster, alice, api_as, fields, field
):
    response = api_as(alice).post(URL, body(**fields), format="json")
    assert (response.status_code, field in response.json()["error"]["fields"]) == (400, True)


@pytest.mark.parametrize("starts_at", ["2027-06-01T09:00:00", "2027-06-01", "2027-06-01 09:00"])
def test_a_time_without_its_utc_offset_is_a_400_on_its_field(cluster, alice, api_as, starts_at):
    response = api_as(alice).post(URL, body(starts_at=starts_at), format="json")
    assert (response.status_code, list(response.json()["error"]["fields"])) == (400, ["starts_at"])
