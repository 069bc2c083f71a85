"""The metering tables by month on PostgreSQL: partitions made ahead of time, each row in its
month's, a month's rows that came before its partition moved into it; and the keys that keep a
GPU-second from being billed twice still refuse duplicates on either database."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import IntegrityError, connection

from billing import services
from billing.models import BillingRecord, UsageInterval
from billing.pricing import month_of

from .conftest import at, ran
from .test_services_metering import reserve

pytestmark = pytest.mark.django_db

postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="the metering tables are partitioned on PostgreSQL only; set DATABASE_URL",
)
TABLES = ("billing_usageinterval", "billing_billingrecord")
# Months no migration or other test made partitions for.
FAR = datetime(2031, 1, 15, tzinfo=UTC)


def partitions(table: str) -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT inhrelid::regclass::text FROM pg_inherits WHERE inhparent = %s::regclass",
            [table],
        )
        return {name for (name,) in cursor.fetchall()}


def partition_of(model, pk: int) -> str:
    """The partition that holds the row of ``model`` with primary key ``pk``."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT tableoid::regclass::text FROM {model._meta.db_table} WHERE id = %s", [pk]
        )
        return cursor.fetchone()[0]


def month_name(table: str, moment: datetime) -> str:
    return f"{table}_{month_of(moment)[0]:%Y_%m}"


@postgresql_only
def test_the_partitions_of_this_month_and_the_next_ones_are_made(db):
    made = services.metering_partitions_ensure(months_ahead=2, now=FAR)
    months = ["2031_01", "2031_02", "2031_03"]
    assert made == [f"{table}_{month}" for table in TABLES for month in months]


@postgresql_only
def test_made_partitions_belong_to_their_tables(db):
    services.metering_partitions_ensure(months_ahead=2, now=FAR)
    assert {"billing_usageinterval_2031_03", "billing_billingrecord_2031_03"} <= (
        partitions("billing_usageinterval") | partitions("billing_billingrecord")
    )


@postgresql_only
def test_making_the_partitions_again_makes_none(db):
    services.metering_partitions_ensure(months_ahead=2, now=FAR)
    assert services.metering_partitions_ensure(months_ahead=2, now=FAR) == []


@postgresql_only
def test_an_interval_lands_in_the_partition_of_the_month_it_started(on_demand, vision):
    services.metering_partitions_ensure(months_ahead=2, now=at(0))
    ran(vision, start=1, end=2, name="first")
    ran(vision, start=24 * 35, end=24 * 35 + 1, name="second")  # the next month
    services.usage_intervals_sync()
    first, second = UsageInterval.objects.order_by("started_at")
    assert [partition_of(UsageInterval, first.pk), partition_of(UsageInterval, second.pk)] == [
        month_name("billing_usageinterval", first.started_at),
        month_name("billing_usageinterval", second.started_at),
    ]


@postgresql_only
def test_the_records_of_an_interval_across_a_months_end_land_in_each_months_partition(
    on_demand, vision
):
    services.metering_partitions_ensure(months_ahead=2, now=at(0))
    month_end = (month_of(at(0))[1] - at(0)) / timedelta(hours=1)
    ran(vision, start=month_end - 1, end=month_end + 1)
    services.usage_meter(now=at(month_end + 2))
    before, after = BillingRecord.objects.order_by("starts_at")
    assert [partition_of(BillingRecord, before.pk), partition_of(BillingRecord, after.pk)] == [
        month_name("billing_billingrecord", at(month_end - 1)),
        month_name("billing_billingrecord", at(month_end)),
    ]


@postgresql_only
def test_a_row_of_a_month_without_a_partition_waits_in_the_default_one(on_demand, vision):
    ran(vision, start=24 * 800, end=24 * 800 + 1)  # two years on: beyond the months made
    services.usage_intervals_sync()
    assert partition_of(UsageInterval, UsageInterval.objects.get().pk) == (
        "billing_usageinterval_default"
    )


@postgresql_only
def test_a_months_rows_in_the_default_partition_move_into_its_partition_once_made(
    on_demand, vision
):
    ran(vision, start=24 * 800, end=24 * 800 + 1)
    services.usage_meter(now=at(24 * 800 + 2))
    services.metering_partitions_ensure()
    interval, record = UsageInterval.objects.get(), BillingRecord.objects.get()
    assert (partition_of(UsageInterval, interval.pk), partition_of(BillingRecord, record.pk)) == (
        month_name("billing_usageinterval", interval.started_at),
        month_name("billing_billingrecord", record.starts_at),
    )


def test_without_postgresql_no_partition_is_made(db):
    if connection.vendor == "postgresql":
        pytest.skip("SQLite's tables are plain; on PostgreSQL the tests above apply")
    assert services.metering_partitions_ensure(now=FAR) == []


def test_the_database_refuses_a_second_interval_for_one_placement(on_demand, vision):
    ran(vision, start=1, end=2)
    services.usage_intervals_sync()
    interval = UsageInterval.objects.get()
    interval.pk = None
    with pytest.raises(IntegrityError):
        interval.save()


def test_the_database_refuses_a_second_record_for_one_reserved_hour(
    reserved, alice, acme, operator
):
    reserve(alice, acme, operator, start=1, end=2)
    services.usage_meter(now=at(24))
    record = BillingRecord.objects.get(charge="reservation")
    record.pk = None
    with pytest.raises(IntegrityError):
        record.save()
