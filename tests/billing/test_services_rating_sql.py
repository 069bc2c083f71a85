"""PostgreSQL rates in one statement a range (``rating_sql``), SQLite in Python: the two must
write the same records for any usage, price history and reservation."""

import threading
import time
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection, transaction
from django.db.models import Sum
from django.test import override_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from billing import services
from billing.models import BillingRecord, UsageInterval
from billing.services import metering, rating, rating_sql
from scheduling.models import Placement, Reservation, Workload
from tenants.permissions import Caller

from .conftest import at, ran
from .test_services_metering import reserve

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="the SQL rating runs on PostgreSQL only"
    ),
]

RECORD_FIELDS = (
    "interval__placement__workload__name",
    "charge",
    "starts_at",
    "ends_at",
    "quantity_seconds",
    "item_id",
    "price_version_id",
    "unit_price",
    "cost",
)

usage = st.fixed_dictionaries(
    {
        "start": st.integers(min_value=0, max_value=60 * 30),
        "length": st.one_of(st.none(), st.integers(min_value=1, max_value=60 * 30)),
        "shape": st.sampled_from([{"gpus": 1}, {"gpus": 8}, {"gpu_milli": 250}]),
    }
)


def rated_records(rate, horizon) -> list[tuple]:
    BillingRecord.objects.filter(interval__isnull=False).delete()
    UsageInterval.objects.update(rated_until=None)
    rate(first=0, last=2**62, horizon=horizon)
    return list(
        BillingRecord.objects.filter(interval__isnull=False)
        .order_by(*RECORD_FIELDS[:3])
        .values_list(*RECORD_FIELDS)
    )


@pytest.mark.slow
@settings(
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    usages=st.lists(usage, min_size=1, max_size=4),
    list_changes=st.lists(st.integers(min_value=1, max_value=60 * 60), max_size=2, unique=True),
    own_changes=st.lists(st.integers(min_value=0, max_value=60 * 60), max_size=2, unique=True),
    window=st.one_of(st.none(), st.tuples(st.integers(0, 40), st.integers(1, 20))),
    horizon_minutes=st.integers(min_value=60, max_value=60 * 62),
)
def test_sql_and_python_rating_write_the_same_records(
    on_demand,
    reserved,
    operator,
    alice,
    acme,
    vision,
    usages,
    list_changes,
    own_changes,
    window,
    horizon_minutes,
):
    BillingRecord.objects.all().delete()
    UsageInterval.objects.all().delete()
    Placement.objects.all().delete()
    Workload.objects.all().delete()
    Reservation.objects.all().delete()
    on_demand.prices.exclude(effective_from__lt=at(0)).delete()
    for minutes, organization in [(m, None) for m in list_changes] + [
        (m, acme) for m in own_changes
    ]:
        services.price_version_add(
            caller=Caller(user=operator),
            item=on_demand,
            unit_price=Decimal(minutes % 7) + Decimal("0.0001") * minutes,
            effective_from=at(minutes / 60),
            organization=organization,
        )
    if window:
        reserve(alice, acme, operator, start=window[0], end=window[0] + window[1])
    for n, used in enumerate(usages):
        start = used["start"] / 60
        end = None if used["length"] is None else start + used["length"] / 60
        ran(vision, start=start, end=end, name=f"w{n}", **used["shape"])
    services.usage_intervals_sync()
    horizon = rating.hour_floor(at(horizon_minutes / 60))
    in_sql = rated_records(rating_sql.intervals_rate, horizon)
    in_python = rated_records(rating._intervals_rate, horizon)
    assert in_sql == in_python


def test_a_range_is_rated_in_one_statement(on_demand, vision, django_assert_num_queries):
    for n in range(5):
        ran(vision, start=n, end=n + 30, name=f"w{n}")
    services.usage_intervals_sync()
    with django_assert_num_queries(2):  # the range's lock and sort memory, the statement
        written = rating_sql.intervals_rate(first=0, last=2**62, horizon=at(40))
    assert written == 5 * 30


def test_the_rated_part_is_remembered_with_the_records(on_demand, vision):
    ran(vision, start=0.5)
    services.usage_intervals_sync()
    rating_sql.intervals_rate(first=0, last=2**62, horizon=at(3))
    assert UsageInterval.objects.get().rated_until == at(3)


def test_sql_rating_splits_a_day_long_interval_into_hours(on_demand, vision):
    ran(vision, start=0, end=24)
    services.usage_intervals_sync()
    rating_sql.intervals_rate(first=0, last=2**62, horizon=at(48))
    starts = list(BillingRecord.objects.values_list("starts_at", flat=True))
    assert starts == [at(0) + timedelta(hours=h) for h in range(24)]


@pytest.mark.django_db(transaction=True)
@override_settings(PORTAL_METER_CONNECTIONS=2)
def test_ranges_metered_on_two_connections_at_once_bill_every_second_once(on_demand, vision):
    def far_ids(table: str, next_id: int) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), {next_id})")

    placed = []
    for n, start in enumerate((0, 1, 2, 3)):
        far_ids("scheduling_placement", 1 + n * metering.SYNC_CHUNK)
        placed.append(ran(vision, start=start, end=start + 2.5, name=f"w{n}"))
        if n == 1:
            services.usage_intervals_sync()
            far_ids("billing_usageinterval", 2 * rating.RATE_CHUNK)
    services.usage_intervals_sync()
    services.usage_rate(now=at(10))
    assert (
        UsageInterval.objects.filter(rated_until__isnull=False).count(),
        BillingRecord.objects.aggregate(total=Sum("quantity_seconds"))["total"],
    ) == (4, Decimal(4 * 8 * 9000))


def sessions_waiting_for_a_lock() -> int:
    with connection.cursor() as cursor:
        # Else a transaction sees the activity as it was when it first looked.
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_a_pass_rating_a_range_another_pass_is_rating_waits_and_then_writes_nothing(
    on_demand, vision
):
    ran(vision, start=0, end=3)
    services.usage_intervals_sync()
    interval = UsageInterval.objects.get()
    first = interval.pk - interval.pk % rating.RATE_CHUNK
    written = {}

    def second_pass():
        try:
            written["second"] = services.usage_rate(now=at(10))
        finally:
            connection.close()

    with transaction.atomic():
        written["first"] = rating_sql.intervals_rate(
            first=first, last=first + rating.RATE_CHUNK, horizon=at(10)
        )
        second = threading.Thread(target=second_pass)
        second.start()
        # Committed only once the second pass waits for the range (not a timing: a wait).
        while sessions_waiting_for_a_lock() == 0 and second.is_alive():
            time.sleep(0.01)
    second.join()
    assert (written, BillingRecord.objects.count()) == ({"first": 3, "second": 0}, 3)
