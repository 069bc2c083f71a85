"""GET …/capacity-calendar/: free, reserved and busy GPUs per pool and hour, and the windows
where a block of GPUs fits."""

from datetime import datetime, timedelta

import pytest

from portal import clock
from scheduling import services
from scheduling.models import Node, NodePool
from tenants.permissions import Caller

from ...queries import assert_list_queries
from ...roles import READING
from ..capacity import next_hour
from ..capacity import reserve_hours as reserve

pytestmark = pytest.mark.django_db

URL = "/api/v1/organizations/acme/capacity-calendar/"


def dgx(body: dict) -> dict:
    return next(p for p in body["pools"] if p["pool"] == "dgx-h100")


@pytest.mark.parametrize(("caller", "status"), READING)
def test_every_member_reads_the_calendar_and_no_one_else(cluster, actors, api_as, caller, status):
    assert api_as(actors.get(caller)).get(URL).status_code == status


def test_a_foreign_tenant_gets_a_404_for_another_organizations_calendar(cluster, bruno, api_as):
    assert api_as(bruno).get(URL + "?gpus=8").status_code == 404


def test_the_calendar_covers_every_gpu_pool_for_14_days_by_default(cluster, alice, api_as):
    body = api_as(alice).get(URL).json()
    assert (body["hours"], {p["pool"] for p in body["pools"]}, len(dgx(body)["free"])) == (
        336,
        set(NodePool.objects.filter(gpu_class__isnull=False).values_list("name", flat=True)),
        336,
    )


def test_another_tenants_reservation_shows_as_reserved_gpus(cluster, bruno, globex, alice, api_as):
    reserve(bruno, globex, from_hours=2, hours=3, gpus=16)
    pool = dgx(api_as(alice).get(URL + "?pool=dgx-h100&hours=6").json())
    assert (pool["reserved"], pool["free"]) == ([0, 0, 16, 16, 16, 0], [64, 64, 48, 48, 48, 64])


def test_running_work_is_busy_until_its_max_runtime_ends(submit, cycle, alice, api_as):
    clock.advance(seconds=(next_hour() - clock.now()).total_seconds())
    submit(name="short", gpus=8, max_runtime=timedelta(hours=2))
    cycle()
    pool = dgx(api_as(alice).get(URL + "?gpu_class=H100-80GB&hours=4").json())
    assert pool["busy"] == [8, 8, 0, 0]


def test_a_block_search_proposes_the_earliest_window_in_words(
    cluster, bruno, globex, alice, api_as
):
    # globex holds 60 of the 64 H100 for the next three hours: 8 on one node fit from then.
    reserve(bruno, globex, from_hours=0, hours=3, gpus=60)
    body = api_as(alice).get(URL + "?pool=dgx-h100&gpus=8&length=2").json()
    first = body["windows"][0]
    assert (first["starts_at"], first["sentence"]) == (
        (next_hour() + timedelta(hours=3)).isoformat().replace("+00:00", "Z"),
        f"8 H100-80GB on one node in dgx-h100: from {(next_hour() + timedelta(hours=3)):%A %H:%M}",
    )


def test_a_proposed_window_is_accepted_by_the_reservation_service(
    cluster, bruno, globex, alice, acme, submit, cycle, api_as
):
    reserve(bruno, globex, from_hours=1, hours=5, gpus=40)
    submit(name="long", gpus=8, max_runtime=timedelta(hours=7))
    cycle()
    body = api_as(alice).get(URL + "?pool=dgx-h100&gpus=16&level=rack&length=4").json()
    for window in body["windows"]:
        [held] = services.reservations_request(
            caller=Caller(user=alice),
            organization=acme,
            request=services.ReservationRequest(
                gpu_class=window["gpu_class"],
                gpus=16,
                starts_at=datetime.fromisoformat(window["starts_at"]),
                ends_at=datetime.fromisoformat(window["ends_at"]),
                pool=window["pool"],
            ),
        )
        held.delete()  # the next one against the unchanged cluster
    assert body["windows"]


@pytest.mark.parametrize(
    ("query", "fields"),
    [
        ("hours=0", ["hours"]),
        ("hours=337", ["hours"]),
        ("gpus=0", ["gpus"]),
        ("gpus=8&level=nvlink", ["level"]),
        ("gpus=8&length=20&hours=10", ["length"]),
        ("from=2020-01-01T00:00:00Z", ["from"]),
        ("from=tomorrow", ["from"]),
        ("pool=no-such-pool", ["pool"]),
        ("pool=", ["pool"]),
        ("gpu_class=B200", ["gpu_class"]),
        ("bogus=1", ["bogus"]),
    ],
)
def test_bad_input_is_a_400_naming_the_field(cluster, alice, api_as, query, fields):
    response = api_as(alice).get(f"{URL}?{query}")
    assert (response.status_code, sorted(response.json()["error"]["fields"])) == (400, fields)


def test_the_calendar_takes_the_same_queries_however_large_the_cluster(
    cluster, submit, cycle, alice, acme, api_as
):
    made = []

    def add(count: int) -> None:
        for _ in range(count):
            n = len(made)
            made.append(n)
            dgx = NodePool.objects.get(name="dgx-h100")
            pool = NodePool.objects.create(
                name=f"x-{n}", cluster=dgx.cluster, gpu_class=dgx.gpu_class
            )
            Node.objects.create(
                name=f"x-{n}-node", pool=pool, gpu_count=8, cpu_milli=1000, memory_mib=1024
            )
            reserve(alice, acme, from_hours=2 + n, hours=1, gpus=1, pool=pool.name)
            submit(name=f"w-{n}", gpus=1, max_runtime=timedelta(hours=3))
        cycle()

    assert_list_queries(
        api_as(alice),
        URL + "?gpus=8",
        add_rows=add,
        queries=11,
        rows=lambda r: len(r.json()["pools"]),
    )
